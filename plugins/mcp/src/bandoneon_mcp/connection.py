"""One live session with one MCP server, owned by the hub's event loop.

A holder task keeps the transport (a child process or an HTTP session) and the
``ClientSession`` open until it is told to stop, so they are entered and left by the same
task, as anyio requires. Calls run in their callers' tasks on the same loop and are
multiplexed over the one session by request id.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Any

import mcp.types as mcp_types
import anyio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

import bandoneon

from .config import Server
from .events import ServerUnavailable
from .stderr import StderrTail

__all__ = ["Connection"]

_CONNECTION_CLOSED = mcp_types.CONNECTION_CLOSED
_MAX_TOOL_PAGES = 100
_GARBAGE_KEPT = 3
#: Characters of a server's stderr quoted when it fails.
_QUOTED = 300


class Connection:
    """A server's session, its tools, and whether it is alive. Use only on the hub's loop."""

    def __init__(self, name: str, server: Server):
        self.name = name
        self.server = server
        self.tools: list[mcp_types.Tool] = []
        self.capabilities: mcp_types.ServerCapabilities | None = None
        self.generation = 0
        #: Counts ``tools/list_changed`` notifications; each agent compares it with the count it last saw.
        self.tools_epoch = 0
        self._session: ClientSession | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._failure: str | None = None
        self._garbage: list[str] = []
        self._stderr: StderrTail | None = None
        #: Set when its last user closed it: it is never started again (the hub makes a new one).
        self._closed = False

    @property
    def is_alive(self) -> bool:
        return self._session is not None and self._failure is None

    # ------------------------------------------------------------------ start and stop

    async def start(self) -> None:
        """Start the server unless it runs; raise ``ServerUnavailable`` with the reason."""
        async with self._lock:
            if not self.is_alive:
                await self._restart_locked()

    async def restart(self, generation: int) -> None:
        """Start the server again, unless someone already did since ``generation`` died."""
        async with self._lock:
            if self.generation == generation or not self.is_alive:
                await self._restart_locked()

    async def close(self) -> None:
        async with self._lock:
            self._closed = True
            await self._stop_holder()

    async def _restart_locked(self) -> None:
        # A call still under way when the last agent closed the server sees it stop; started
        # again here, it would run on with no agent to close it.
        if self._closed:
            raise ServerUnavailable(f"MCP server {self.name!r} was closed with the last agent using it; it is not started again.")
        await self._stop_holder()
        self.generation += 1
        self._failure = None
        self._garbage = []
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._holder = asyncio.create_task(self._hold(ready, self._stop), name=f"mcp server {self.name}")
        try:
            await ready
        except ServerUnavailable:
            await self._stop_holder()
            raise

    async def _stop_holder(self) -> None:
        holder, self._holder, self._session = self._holder, None, None
        if holder is None:
            return
        assert self._stop is not None
        self._stop.set()
        # The holder leaves its contexts in order: the session, then the transport, whose
        # shutdown closes stdin, then terminates and finally kills the child (bounded waits).
        await asyncio.gather(holder, return_exceptions=True)

    async def _hold(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(stack))
                if self._stderr is not None:
                    self._stderr.spawned()
                session = await stack.enter_async_context(ClientSession(read, write, message_handler=self._on_message))
                # The limit is inside the holder (entered after the session, left before it),
                # so a server that never answers is shut down like any other: in order.
                with anyio.fail_after(self.server.startup_timeout):
                    initialized = await session.initialize()
                    self.capabilities = initialized.capabilities
                    self.tools = await _list_tools(session) if initialized.capabilities.tools is not None else []
                self._session = session
                ready.set_result(None)
                await stop.wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if ready.done():
                self._failure = _describe(exc)
            elif _has(exc, TimeoutError):
                ready.set_exception(
                    ServerUnavailable(
                        f"MCP server {self.name!r} did not finish starting within {self.server.startup_timeout:g} s "
                        f"(startup_timeout){self._evidence()}; it was stopped."
                    )
                )
            else:
                where = f" at {self.server.url}" if self.server.url else ""
                ready.set_exception(ServerUnavailable(f"MCP server {self.name!r} could not be started{where}: {_describe(exc)}{self._evidence()}"))
        finally:
            if not ready.done():
                ready.set_exception(ServerUnavailable(f"MCP server {self.name!r} stopped while starting{self._evidence()}"))

    def _transport(self, stack: AsyncExitStack) -> Any:
        server = self.server
        if server.command is not None:
            # The child's stderr is drained into a bounded tail, so a failure to start can quote it.
            self._stderr = StderrTail()
            stack.callback(self._stderr.spawned)  # also when the process could not be started
            parameters = StdioServerParameters(command=server.command, args=list(server.args), env=dict(server.env) or None, cwd=server.cwd)
            return stdio_client(parameters, errlog=self._stderr.for_child)
        from mcp.shared._httpx_utils import create_mcp_http_client

        assert server.url is not None
        client = create_mcp_http_client(headers=dict(server.headers) or None)
        stack.push_async_callback(client.aclose)
        return streamable_http_client(server.url, http_client=client)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            if len(self._garbage) < _GARBAGE_KEPT:
                self._garbage.append(str(message).splitlines()[0][:200] if str(message) else type(message).__name__)
        elif isinstance(message, mcp_types.ToolListChangedNotification):
            self.tools_epoch += 1

    def _evidence(self) -> str:
        """What the server left behind: lines on stdout that were not JSON-RPC, its stderr;
        shown, never obeyed, by the terminal a warning is printed on."""
        said = []
        if self._garbage:
            said.append(f"it wrote {len(self._garbage)}+ line(s) on stdout that are not JSON-RPC (first: {self._garbage[0]})")
        tail = self._stderr.tail(_QUOTED) if self._stderr is not None else ""
        if tail:
            said.append(f"its stderr ends with: {tail}")
        return " (" + bandoneon.for_terminal("; ".join(said)) + ")" if said else ""

    # ------------------------------------------------------------------ requests

    async def refresh_tools(self) -> list[mcp_types.Tool]:
        """The server's tools listed again, within ``startup_timeout`` (as the first listing):
        a server that announces a change and never lists its tools must not hold a turn."""
        session = self._live_session()
        with anyio.fail_after(self.server.startup_timeout):
            self.tools = await self._request(lambda: _list_tools(session))
        return self.tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """A tool call; the tool bounds how long it waits (it knows the agent's ``tool_timeout``)."""
        session = self._live_session()
        return await self._request(lambda: session.call_tool(name, arguments))

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        session = self._live_session()
        return await self._bounded("resources/read", lambda: session.read_resource(uri))

    async def list_resources(self) -> list[mcp_types.Resource]:
        session = self._live_session()
        return await self._bounded("resources/list", lambda: _list_all(session.list_resources, "resources"))

    async def list_prompts(self) -> list[mcp_types.Prompt]:
        session = self._live_session()
        return await self._bounded("prompts/list", lambda: _list_all(session.list_prompts, "prompts"))

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> mcp_types.GetPromptResult:
        session = self._live_session()
        return await self._bounded("prompts/get", lambda: session.get_prompt(name, arguments))

    def _live_session(self) -> ClientSession:
        if self._session is None or self._failure is not None:
            reason = self._failure or "it is not running"
            raise ServerUnavailable(f"MCP server {self.name!r} is not available: {reason}", generation=self.generation, was_sent=False)
        return self._session

    async def _request(self, send: Any) -> Any:
        generation = self.generation
        try:
            return await send()
        except MCPError as exc:
            if exc.code != _CONNECTION_CLOSED or await self._answers_ping():
                raise
            self._failure = f"the connection closed ({exc.message}){self._evidence()}"
            raise ServerUnavailable(f"MCP server {self.name!r} stopped: {self._failure}", generation=generation) from None

    async def _bounded(self, method: str, send: Any) -> Any:
        """A request that is not a tool call, within ``Server.call_limit()``: a server that never
        answers one must not hold the Python API (or the resource tools) for ever."""
        limit = self.server.call_limit()
        try:
            with anyio.fail_after(limit):
                return await self._request(send)
        except TimeoutError:
            raise TimeoutError(f"MCP server {self.name!r} did not answer {method} within {limit:g} s (call_timeout)") from None

    async def _answers_ping(self) -> bool:
        """Is the server still there? The SDK's code for a closed connection (-32000) opens
        JSON-RPC's range for servers' own errors, so a server's "quota exceeded" may carry it."""
        session = self._session
        if session is None:
            return False
        try:
            with anyio.fail_after(self.server.startup_timeout):
                await session.send_ping()
        except Exception:  # whatever the transport raises (an HTTP server gone: httpx's errors), no answer
            return False
        return True


async def _list_tools(session: ClientSession) -> list[mcp_types.Tool]:
    return await _list_all(session.list_tools, "tools")


async def _list_all(method: Any, field: str) -> list[Any]:
    """Every page of a paginated list (bounded, so a server that never ends cannot hang us)."""
    items: list[Any] = []
    cursor = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await method(params=mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _has(exc: BaseException, kind: type[BaseException]) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return any(_has(inner, kind) for inner in exc.exceptions)
    return isinstance(exc, kind)


def _describe(exc: BaseException) -> str:
    """Why a server failed, in words a terminal shows as they are (the server wrote some)."""
    return bandoneon.for_terminal(_reason(exc))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"the command was not found ({exc.filename or exc})"
    if isinstance(exc, MCPError):
        return exc.message or str(exc)
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(inner) for inner in exc.exceptions)
    return str(exc) or type(exc).__name__
