"""The ``mcp`` plugin: the tools (and, when asked, the resources) of MCP servers in an agent.

Servers start when the first agent that needs them is built and are shared by the agents of
the process (see ``hub``). Their tools are added in ``agent_created`` (tryfirst, so the
guard's trifecta check, which runs there too, sees them) through ``Agent.add_tool``.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Coroutine
from typing import Any, ClassVar

import attrs
import mcp.types as mcp_types

import bandoneon

from . import hookspecs
from .config import Server, servers_from_options
from .connection import Connection
from .descriptions import schema_of, tool_description
from .events import McpToolsChanged, ServerUnavailable
from .hub import hub
from .resources import resource_tools
from .tools import InvalidSchema, bandoneon_name, call_with_restart, make_tool

__all__ = ["McpPlugin", "McpServerWarning"]


class McpServerWarning(UserWarning):
    """A configured MCP server did not start; the agent was built without its tools."""


@attrs.define
class McpPlugin(bandoneon.Plugin):
    """Tools from MCP servers (``servers``: name → ``Server`` or a table of its options)."""

    name: ClassVar[str] = "mcp"
    #: ``mcp_server_allowed``: policy packs allow or deny whole servers.
    hookspecs: ClassVar[Any] = hookspecs
    servers: dict[str, Server] = attrs.field(factory=dict, converter=servers_from_options)
    # Per agent (one plugin instance may serve several): the lease and the tools it was given.
    _leases: weakref.WeakKeyDictionary[Any, int] = attrs.field(init=False, factory=weakref.WeakKeyDictionary)
    _offered: weakref.WeakKeyDictionary[Any, dict[str, dict[str, str]]] = attrs.field(init=False, factory=weakref.WeakKeyDictionary)
    _epochs: weakref.WeakKeyDictionary[Any, dict[str, int]] = attrs.field(init=False, factory=weakref.WeakKeyDictionary)

    # ------------------------------------------------------------------ agent hooks

    @bandoneon.hookimpl(tryfirst=True)
    def agent_created(self, agent: bandoneon.Agent) -> None:
        lease = self._lease(agent)
        offered: dict[str, dict[str, str]] = {}
        epochs: dict[str, int] = {}
        self._offered[agent] = offered
        self._epochs[agent] = epochs
        try:
            for server_name, server in self.servers.items():
                connection = self._start_for(agent, lease, server_name, server)
                if connection is None:
                    continue
                epochs[server_name] = connection.tools_epoch
                offered[server_name] = self._add_tools(agent, server_name, server, connection.tools, {})
                if server.resources:
                    for made in resource_tools(self, server_name, _taken(agent)):
                        agent.add_tool(made)
        except BaseException:
            # The agent is not built: the servers started for it stop (unless others use them).
            self._leases.pop(agent, None)
            hub.wait(hub.release(lease))
            raise

    def _start_for(self, agent: bandoneon.Agent, lease: int, server_name: str, server: Server) -> Connection | None:
        """The running server, or None (with a warning) when it is refused or does not start;
        a required server that cannot be had is a ``ConfigError``."""
        refusal = agent.hooks.call_sync(hookspecs.mcp_server_allowed, agent=agent, name=server_name, server=server)
        try:
            if refusal is not None:
                raise ServerUnavailable(f"MCP server {server_name!r} is not allowed in agent {agent.name!r}: {refusal.reason}")
            return hub.wait(hub.acquire(lease, server_name, server))
        except ServerUnavailable as exc:
            if server.required:
                raise bandoneon.ConfigError(f"{exc} (the server is marked required)") from None
            warnings.warn(f"{str(exc).rstrip('.')}. The agent has none of its tools.", McpServerWarning, stacklevel=3)
            return None

    @bandoneon.hookimpl
    def before_run(self, run: bandoneon.RunContext) -> Coroutine[Any, Any, None] | None:
        """An agent closed earlier and run again takes its servers back."""
        if not self.servers:
            return None  # installed, nothing configured: a run pays nothing for it
        return self._take_servers(run)

    async def _take_servers(self, run: bandoneon.RunContext) -> None:
        if run.agent not in self._leases:
            lease = self._lease(run.agent)
            for server_name, server in self.servers.items():
                if server_name in self._offered.get(run.agent, {}):
                    try:
                        await hub.run(hub.acquire(lease, server_name, server))
                    except ServerUnavailable:
                        pass  # its tools answer with the reason when called
        await self._refresh(run)

    @bandoneon.hookimpl
    def before_turn(self, run: bandoneon.RunContext) -> Coroutine[Any, Any, None] | None:
        return self._refresh(run) if run.turn > 1 and self.servers else None

    @bandoneon.hookimpl
    async def agent_closed(self, agent: bandoneon.Agent) -> None:
        lease = self._leases.pop(agent, None)
        if lease is not None:
            await hub.run(hub.release(lease))

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers: Any) -> None:
        from .cli import add_mcp_command

        add_mcp_command(subparsers)

    # ------------------------------------------------------------------ Python API

    async def list_tools(self, server: str | None = None) -> dict[str, list[mcp_types.Tool]]:
        """Each server's tools as it lists them now."""
        return {name: await hub.run(self._connection(name).refresh_tools()) for name in self._names(server)}

    async def list_resources(self, server: str | None = None) -> dict[str, list[mcp_types.Resource]]:
        """Each server's resources (servers without resources give an empty list)."""
        found = {}
        for name in self._names(server):
            connection = self._connection(name)
            has = connection.capabilities is not None and connection.capabilities.resources is not None
            found[name] = await hub.run(connection.list_resources()) if has else []
        return found

    async def read_resource(self, uri: str, server: str | None = None) -> list[Any]:
        """The contents of resource ``uri`` (``TextResourceContents`` / ``BlobResourceContents``).

        Without ``server``: the server that lists ``uri``, or the only server.
        """
        name = server or await self._server_of(uri)
        result = await call_with_restart(hub, self._connection(name), name, None, lambda c: c.read_resource(uri))
        return list(result.contents)

    async def list_prompts(self, server: str | None = None) -> dict[str, list[mcp_types.Prompt]]:
        found = {}
        for name in self._names(server):
            connection = self._connection(name)
            has = connection.capabilities is not None and connection.capabilities.prompts is not None
            found[name] = await hub.run(connection.list_prompts()) if has else []
        return found

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None, *, server: str | None = None) -> mcp_types.GetPromptResult:
        """Prompt ``name`` filled with ``arguments`` (its messages, ready to send)."""
        server_name = server
        if server_name is None:
            owners = [s for s, prompts in (await self.list_prompts()).items() if any(p.name == name for p in prompts)]
            if not owners:
                raise KeyError(f"no configured MCP server has a prompt named {name!r}")
            server_name = owners[0]
        return await call_with_restart(hub, self._connection(server_name), server_name, None, lambda c: c.get_prompt(name, arguments))

    # ------------------------------------------------------------------ inside

    def _lease(self, agent: bandoneon.Agent) -> int:
        lease = self._leases.get(agent)
        if lease is None:
            lease = self._leases[agent] = hub.new_lease()
            weakref.finalize(agent, hub.release_soon, lease)
        return lease

    def _names(self, server: str | None) -> list[str]:
        if server is not None and server not in self.servers:
            raise KeyError(f"no MCP server named {server!r}; configured: {', '.join(self.servers) or 'none'}")
        return [server] if server is not None else list(self.servers)

    def _connection(self, server_name: str) -> Connection:
        server = self.servers[server_name]
        for connection in hub.connections():
            if connection.server.key == server.key:
                return connection
        raise ServerUnavailable(f"MCP server {server_name!r} is not running: no agent using it is open")

    async def _server_of(self, uri: str) -> str:
        if len(self.servers) == 1:
            return next(iter(self.servers))
        for name, resources in (await self.list_resources()).items():
            if any(str(r.uri) == uri for r in resources):
                return name
        raise KeyError(f"no configured MCP server lists the resource {uri!r}; pass server=")

    def _add_tools(
        self, agent: bandoneon.Agent, server_name: str, server: Server, tools: list[mcp_types.Tool], known: dict[str, str], *, known_only_later: bool = False
    ) -> dict[str, str]:
        """Add the server's tools the filters let through; return remote name → agent name.
        ``known_only_later``: the tools were announced during a run (refusals do not end it)."""
        names = dict(known)
        for remote in tools:
            if not server.offers(remote.name) or remote.name in names:
                continue
            try:
                local = bandoneon_name(server_name, server, remote.name, _taken(agent))
                agent.add_tool(make_tool(hub, lambda: self._connection(server_name), server_name, server, remote, local))
            except InvalidSchema as exc:
                # The server's mistake, which no option of ours can fix: its other tools are offered.
                warnings.warn(f"{str(exc).rstrip('.')}. The tool was left out.", McpServerWarning, stacklevel=2)
                continue
            except bandoneon.ConfigError as exc:
                if not known_only_later:
                    raise
                # A tool announced mid-run that a check refuses (a name clash, the trifecta with
                # trifecta = "refuse"): the run goes on without it.
                warnings.warn(f"MCP server {server_name!r}: its new tool {remote.name!r} was not added: {exc}", McpServerWarning, stacklevel=2)
                continue
            names[remote.name] = local
        return names

    async def _refresh(self, run: bandoneon.RunContext) -> None:
        """Between turns: a server that sent ``tools/list_changed`` is listed again; new tools
        are added and tools it no longer lists are removed (through ``add_tool`` and
        ``remove_tool``, so checks on the tool set run again)."""
        offered = self._offered.get(run.agent, {})
        epochs = self._epochs.get(run.agent, {})
        for server_name, names in offered.items():
            try:
                connection = self._connection(server_name)
            except ServerUnavailable:
                continue
            epoch = connection.tools_epoch
            if epochs.get(server_name) == epoch:
                continue
            epochs[server_name] = epoch
            try:
                tools = await hub.run(connection.refresh_tools())
            except ServerUnavailable:
                continue
            except TimeoutError:
                limit = self.servers[server_name].startup_timeout
                warnings.warn(
                    f"MCP server {server_name!r} did not list its tools within {limit:g} s (startup_timeout) after announcing "
                    "a change; its tools stay as they were.",
                    McpServerWarning,
                    stacklevel=2,
                )
                continue
            listed = {t.name: t for t in tools}
            # A tool listed again with another schema or description is taken off and added
            # anew: kept, it would go on offering the old schema and refusing (before sending)
            # every call that fits the server's new one.
            changed = {remote for remote, local in names.items() if remote in listed and _differs(run.agent.tools.get(local), server_name, listed[remote])}
            kept = {remote: local for remote, local in names.items() if remote not in changed}
            before = set(kept.values())
            removed = tuple(sorted(local for remote, local in names.items() if remote not in listed or remote in changed))
            for local in removed:
                if local in run.agent.tools:
                    run.agent.remove_tool(local)
            current = self._add_tools(run.agent, server_name, self.servers[server_name], tools, kept, known_only_later=True)
            added = tuple(sorted(set(current.values()) - before))
            offered[server_name] = {remote: local for remote, local in current.items() if remote in listed}
            if added or removed:
                await run.emit(McpToolsChanged(run.run_id, server_name, added, removed))


def _differs(offered: bandoneon.Tool | None, server_name: str, listed: mcp_types.Tool) -> bool:
    """Does the server's new listing of a tool differ from the tool the agent offers?"""
    return offered is not None and (offered.parameters != schema_of(listed) or offered.description != tool_description(server_name, listed))


def _taken(agent: bandoneon.Agent) -> set[str]:
    return set(agent.tools)
