"""``bandoneon mcp serve``: bandoneon tools and an agent, offered to any MCP client.

Plain tools are served with their own card (name, description, JSON schema). Each call runs
through a host agent's hooks, so the installed policy packs (and any plugins configured in
``bandoneon.toml``) decide on it and rewrite its result as they would inside an agent. An
agent is served as one tool that takes a brief and returns the final answer; every call runs
on a fork of the agent built by the factory (so calls do not share a history and may overlap)
and reports progress to the client after each turn.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from collections.abc import Sequence
from typing import Any

import mcp.types as mcp_types
from mcp.server.lowlevel import Server as LowLevelServer

import bandoneon

__all__ = ["build_server", "load_served_tools", "serve"]

log = logging.getLogger("bandoneon_mcp")

BRIEF_DESCRIPTION = "The whole task: the goal, the constraints, what a good answer looks like. The agent has not seen your conversation."


def load_served_tools(target: str) -> list[bandoneon.Tool]:
    """The tools named by ``MODULE[:ATTR]``: a tool, a list of them, or every tool the module
    defines. A tool it imports from elsewhere (for its own use: an admin tool, a helper's) is not
    served unless named with ``:ATTR``: serving reaches other processes, so it takes a choice."""
    if ":" in target:
        found = bandoneon.import_object(target, what="--tools")
        values = found if isinstance(found, list | tuple) else [found]
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise bandoneon.ConfigError(f"--tools {target!r}: the module cannot be imported: {exc}") from None
        values = [v for v in vars(module).values() if isinstance(v, bandoneon.Tool) and getattr(v.function, "__module__", None) == module.__name__]
    tools = [v if isinstance(v, bandoneon.Tool) else bandoneon.tool(v) for v in values]
    if not tools:
        raise bandoneon.ConfigError(f"--tools {target!r}: no bandoneon tools defined there (a tool a module imports is served when named: MODULE:ATTR)")
    return tools


class _Served:
    """What one server offers, and how each call runs."""

    def __init__(self, tools: Sequence[bandoneon.Tool], agent: bandoneon.Agent | None, agent_tool: str):
        # The host agent never calls a model: it is the plugins' (policy packs') view of each call.
        self.host = bandoneon.Agent(_NoModel(), tools=tools, context_files=False, name="mcp-serve")
        # Exactly the tools asked for: the host also has the tools of the plugins bandoneon.toml
        # configures (its MCP servers', for one), which nobody asked to serve.
        self.tools = {t.name: self.host.tools[t.name] for t in tools}
        self.agent = agent
        self.agent_tool = agent_tool
        if agent is not None and agent_tool in self.tools:
            raise bandoneon.ConfigError(f"--agent-tool {agent_tool!r} is also the name of a served tool; choose another name")

    def cards(self) -> list[mcp_types.Tool]:
        cards = [mcp_types.Tool(name=t.name, description=t.description, input_schema=dict(t.parameters)) for t in self.tools.values()]
        if self.agent is not None:
            schema = {
                "type": "object",
                "properties": {"brief": {"type": "string", "description": BRIEF_DESCRIPTION}},
                "required": ["brief"],
                "additionalProperties": False,
            }
            description = f"Ask the agent {self.agent.name!r} to do a task; it answers when done. {BRIEF_DESCRIPTION}"
            cards.append(mcp_types.Tool(name=self.agent_tool, description=description, input_schema=schema))
        return cards

    async def call(self, ctx: Any, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        if self.agent is not None and name == self.agent_tool:
            return await self._ask_agent(ctx, arguments)
        tool = self.tools.get(name)
        if tool is None:
            return _result(f"There is no tool named {name!r}.", is_error=True)
        run = self.host.new_run(f"MCP call to {name}")
        call = bandoneon.ToolCall(f"mcp-{os.urandom(4).hex()}", name, json.dumps(arguments))
        try:
            checked = tool.validate(call.arguments)
        except Exception as exc:  # the core's ArgumentsError: a sentence for the caller
            return _result(str(exc), is_error=True)
        hooks = self.host.hooks
        decision = await hooks.before_tool_execution(run, call, tool, checked)
        if isinstance(decision, bandoneon.Refuse):
            return _result(decision.reason, is_error=True)
        if isinstance(decision, bandoneon.Respond):
            content, is_error = decision.content, decision.is_error
        elif tool.needs_approval:
            return _result(f"{name} needs a person's approval, which cannot be asked over MCP, so it did not run.", is_error=True)
        else:
            # As a run would: within the tool's timeout (else the host's tool_timeout), a
            # failure a sentence without the paths or passwords of its message.
            content, is_error = await bandoneon.invoke_tool(run, tool, checked, in_thread=True)
        result = await hooks.after_tool_execution(run, call, tool, bandoneon.ToolResult(call, content, is_error=is_error, arguments=checked))
        return _result(result.content, is_error=result.is_error)

    async def _ask_agent(self, ctx: Any, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        brief = arguments.get("brief")
        if not isinstance(brief, str) or not brief.strip():
            return _result("Give the agent a brief: a non-empty string in 'brief'.", is_error=True)
        assert self.agent is not None
        worker = self.agent.fork()
        worker.clear()
        limit = worker.max_turns

        async def progress(event: bandoneon.Event) -> None:
            assert isinstance(event, bandoneon.TurnEnd)
            await ctx.session.report_progress(event.turn, limit, f"turn {event.turn} of at most {limit} done")

        worker.on("turn_end", progress)
        try:
            result = await worker.run(brief)
        finally:
            await worker.aclose()
        if result.ok:
            answer = result.text if result.answer is None else json.dumps(result.answer, ensure_ascii=False, default=str)
            return _result(answer or "(the agent finished without words)")
        detail = f": {result.detail}" if result.detail else ""
        return _result(f"The agent stopped without an answer (stop={result.stop}{detail}). {result.text or ''}".strip(), is_error=True)


class _NoModel:
    """The host agent's provider: it is never asked (serving runs no loop of its own)."""

    name = "none"
    model = "none"

    async def complete(self, request: Any, on_delta: Any = None) -> Any:
        raise bandoneon.ConfigError("the mcp serve host agent does not call a model")

    async def context_window(self) -> int | None:
        return None


def _result(text: str, *, is_error: bool = False) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=is_error)


def build_server(tools: Sequence[bandoneon.Tool], agent: bandoneon.Agent | None = None, *, agent_tool: str = "ask_agent") -> LowLevelServer[Any]:
    """An MCP server (the SDK's low-level ``Server``) offering ``tools`` and ``agent``."""
    if not tools and agent is None:
        raise bandoneon.ConfigError("nothing to serve: give --tools MODULE and/or --agent MODULE:FACTORY")
    served = _Served(tools, agent, agent_tool)

    async def list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=served.cards())

    async def call_tool(ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        return await served.call(ctx, params.name, dict(params.arguments or {}))

    return LowLevelServer("bandoneon", version=bandoneon.__version__, on_list_tools=list_tools, on_call_tool=call_tool)


def serve(*, tools: Sequence[str], agent: str | None, agent_tool: str, transport: str, host: str, port: int) -> None:
    """Build what was asked for and serve it until interrupted (stdio: until stdin closes)."""
    import anyio

    served_tools = [t for target in tools for t in load_served_tools(target)]
    served_agent = None
    if agent is not None:
        made = bandoneon.import_object(agent, what="--agent")()
        if not isinstance(made, bandoneon.Agent):
            raise bandoneon.ConfigError(f"--agent {agent!r} must return a bandoneon Agent, got {type(made).__name__}")
        served_agent = made
    server = build_server(served_tools, served_agent, agent_tool=agent_tool)
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async def over_stdio() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(over_stdio)
    else:
        import uvicorn

        app = server.streamable_http_app(host=host)
        uvicorn.run(app, host=host, port=port, log_level="warning")
