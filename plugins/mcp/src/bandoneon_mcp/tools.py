"""An MCP server's tools as bandoneon tools.

Each keeps the server's description and JSON schema, their text as ``descriptions`` lets the
model read it (cut, hidden characters dropped, the server named). The model's arguments are
checked against that schema (jsonschema) before any request goes out, so a wrong call costs
one short sentence, not a round trip. The result becomes text (``results``); ``isError``
becomes an error result the model reads.

Naming: a tool keeps the server's name (made safe for model APIs: letters, digits, ``_``
and ``-``, at most 64) unless the server has a ``prefix``, or the name is already taken in
the agent (its own tools, another plugin's, an earlier server's): then it becomes
``<server>_<name>``. Still taken: the agent cannot be built, and the error says to set a prefix.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Collection
from typing import Any

import jsonschema
import mcp.types as mcp_types
from mcp import MCPError
from pydantic import ValidationError

import bandoneon

from .config import Server
from .descriptions import schema_of, tool_description
from .events import McpServerRestarted, ServerUnavailable
from .hub import Hub
from .results import tool_result_text

__all__ = ["InvalidSchema", "bandoneon_name", "make_tool"]

#: The run context reaches the tool under a name no JSON schema property can have.
_RUN = "bandoneon run"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
#: The servers already restarted in this run (a server is restarted once per run at most).
_RESTARTS: bandoneon.StashKey[set[str]] = bandoneon.StashKey("mcp restarted servers")
_MAX_PROBLEMS = 3
#: Characters of JSON an input schema may put before the model, on every request. Its
#: descriptions are cut (``descriptions``); its enums and property names cannot be, and a
#: tool above this is left out rather than fill (or overflow) the model's context each turn.
MAX_SCHEMA = 64 * 1024


def bandoneon_name(server_name: str, server: Server, tool_name: str, taken: Collection[str]) -> str:
    """The name the model sees (the rule in the module docstring)."""
    safe = _UNSAFE.sub("_", tool_name) or "_"  # "" is a name no model API takes
    name = _fit(f"{server.prefix}{safe}" if server.prefix else safe)
    if name in taken:
        name = _fit(f"{server_name}_{safe}")
    if name in taken:
        raise bandoneon.ConfigError(
            f"MCP server {server_name!r}: its tool {tool_name!r} cannot be named {name!r}, another tool has "
            f"that name; give the server a 'prefix' (for example prefix = \"{server_name}__\")"
        )
    return name


def _fit(name: str) -> str:
    """``name`` safe (a prefix or a server name may have any characters) and at most 64 long.
    A longer name (MCP allows 128) ends with a hash of the whole: names that differ only past
    the 64th character stay different, so a clash is not made here that no prefix could undo."""
    name = _UNSAFE.sub("_", name)
    if len(name) <= 64:
        return name
    import hashlib

    return f"{name[:55]}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"


class InvalidSchema(bandoneon.ConfigError):
    """A server's tool whose input schema cannot check arguments, or is too big to offer: the
    tool is left out."""


def _validator(server_name: str, tool: mcp_types.Tool) -> jsonschema.protocols.Validator:
    schema = tool.input_schema
    # The schema is the server's: jsonschema fails on some shapes with errors other than
    # SchemaError (a "$schema" that is a list or a number), and all of them mean the same.
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
    except Exception as exc:
        problem = exc.message if isinstance(exc, jsonschema.SchemaError) else f"{type(exc).__name__}: {exc}"
        raise InvalidSchema(f"MCP server {server_name!r}: tool {tool.name!r} has an invalid input schema: {problem}") from None
    return cls(schema)


def _problems(name: str, validator: jsonschema.protocols.Validator, arguments: dict[str, Any]) -> list[str]:
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))[:_MAX_PROBLEMS]
    except Exception as exc:  # a schema that passed its check and still cannot be applied ("$ref": "#")
        raise bandoneon.ToolError(
            f"The input schema of {name} cannot be applied ({type(exc).__name__}: {str(exc)[:200]}). Nothing was sent to the server."
        ) from None
    problems = []
    for error in errors:
        where = "/".join(str(part) for part in error.path)
        problems.append(f"{where}: {error.message}" if where else error.message)
    return problems


def make_tool(
    hub: Hub,
    connection_of: Callable[[], Any],
    server_name: str,
    server: Server,
    tool: mcp_types.Tool,
    name: str,
) -> bandoneon.Tool:
    """A bandoneon tool that calls ``tool`` on the server ``connection_of()`` returns."""
    validator = _validator(server_name, tool)
    parameters = schema_of(tool)
    size = len(json.dumps(parameters, ensure_ascii=False))
    if size > MAX_SCHEMA:
        raise InvalidSchema(f"MCP server {server_name!r}: tool {tool.name!r} has an input schema of {size} characters as JSON, above the {MAX_SCHEMA} a tool may put before the model")
    remote = tool.name

    async def call_mcp_tool(**arguments: Any) -> str:
        run: bandoneon.RunContext | None = arguments.pop(_RUN, None)
        problems = _problems(name, validator, arguments)
        if problems:
            raise bandoneon.ToolError(f"Invalid arguments for {name}: " + "; ".join(problems) + ". Nothing was sent to the server.")
        # In a run the loop already bounds the call by the tool's timeout (call_timeout) or the
        # agent's tool_timeout; the call bounds itself only where neither is set.
        bounded_by_the_loop = run is not None and (server.call_timeout or run.agent.tool_timeout)
        limit = None if bounded_by_the_loop else server.call_limit()
        try:
            async with asyncio.timeout(limit) as deadline:
                result = await call_with_restart(hub, connection_of(), server_name, run, lambda c: c.call_tool(remote, arguments))
        except TimeoutError:
            if not deadline.expired():
                raise
            raise bandoneon.ToolError(
                f"MCP server {server_name!r} did not answer {name} within {limit:g} s; the call was cancelled, and may or may "
                "not have taken effect. (Its call_timeout, or the agent's tool_timeout, sets how long a call may take.)"
            ) from None
        text = tool_result_text(result)
        if result.is_error:
            raise bandoneon.ToolError(text)
        return text

    capabilities = set(server.capabilities)
    return bandoneon.Tool(
        name=name,
        description=tool_description(server_name, tool),
        parameters=parameters,
        function=call_mcp_tool,
        needs_approval=server.approval_needed(tool.name),
        untrusted_output=not server.trusted,
        capabilities=frozenset(capabilities | ({"untrusted_output"} if not server.trusted else set())),
        timeout=server.call_timeout,
        context_parameter=_RUN,
        is_async=True,
        source_name=remote,  # what a policy about the server's tool names, whatever the agent calls it
    )


async def call_with_restart(hub: Hub, connection: Any, server_name: str, run: bandoneon.RunContext | None, request: Callable[[Any], Any]) -> Any:
    """Send a request; if the server is gone, start it again once per run (with an event).

    A request that was in flight when the server stopped is not repeated (it may have had
    its effect); one that never left is sent to the restarted server.
    """
    try:
        return await hub.run(request(connection))
    except ServerUnavailable as exc:
        stopped = exc
    except MCPError as exc:
        raise bandoneon.ToolError(f"MCP server {server_name!r} refused the request: {exc.message or exc}") from None
    except ValidationError as exc:
        raise bandoneon.ToolError(_not_mcp(server_name, exc)) from None
    restarted = run.stash.setdefault(_RESTARTS, set()) if run is not None else set()
    if server_name in restarted:
        raise bandoneon.ToolError(f"{stopped} It was already restarted once in this run, so its tools fail until the next run.")
    restarted.add(server_name)
    try:
        await hub.run(connection.restart(stopped.generation))
    except ServerUnavailable as exc:
        raise bandoneon.ToolError(f"{stopped} Restarting it failed: {exc}") from None
    if run is not None:
        await run.emit(McpServerRestarted(run.run_id, server_name, str(stopped)))
    if stopped.was_sent:
        raise bandoneon.ToolError(
            f"{stopped} It was restarted, but this call may or may not have taken effect; call again if that is safe."
        )
    try:
        return await hub.run(request(connection))
    except (ServerUnavailable, MCPError) as exc:
        raise bandoneon.ToolError(f"MCP server {server_name!r} failed again after a restart: {exc}") from None
    except ValidationError as exc:
        raise bandoneon.ToolError(_not_mcp(server_name, exc)) from None


def _not_mcp(server_name: str, error: ValidationError) -> str:
    """One sentence for a reply the SDK cannot read (pydantic's own message lists every kind
    of content block the reply is not, with links: a wall of text for the model)."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])[:100]
    return (
        f"MCP server {server_name!r} answered with something that is not an MCP result "
        f"({where + ': ' if where else ''}{first['msg'][:200]}); the request may have had its effect."
    )
