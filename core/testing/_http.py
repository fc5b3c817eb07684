"""A minimal asyncio HTTP/1.1 server: just enough protocol for a loopback mock of LLM APIs.

It handles keep-alive, ``Content-Length`` and chunked request bodies, ``Expect: 100-continue``,
and chunked streaming responses. One task per connection, so a thousand idle keep-alive clients
cost a thousand small tasks, not a thousand threads.
"""

from __future__ import annotations

import asyncio
import http
import json
from collections.abc import Awaitable, Callable, Mapping

import attrs

# A listen backlog large enough for a benchmark that opens 1,000+ connections at once; the
# kernel caps it at net.core.somaxconn.
_BACKLOG = 4096
_MAX_LINE = 64 * 1024
_MAX_HEADERS = 100
_BLANK_LINES = (b"\r\n", b"\n")


@attrs.frozen
class HttpRequest:
    """One parsed request: header names lower-cased, repeated headers joined with ", "."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    body: bytes


class BadRequest(Exception):
    """The bytes on the wire are not an HTTP/1.1 request this server understands."""


class HttpResponse:
    """The answer to one request: sent whole, streamed in chunks, or dropped without a word."""

    def __init__(self, writer: asyncio.StreamWriter, *, keep_alive: bool) -> None:
        self._writer = writer
        self._keep_alive = keep_alive
        self._state = "new"  # new -> streaming -> done, or -> dropped at any point

    @property
    def is_started(self) -> bool:
        return self._state != "new"

    @property
    def is_complete(self) -> bool:
        """True when the whole response went out and the connection may serve another request."""
        return self._state == "done"

    async def send(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
        """Send a complete response with a ``Content-Length``; ``headers`` override defaults."""
        self._writer.write(self._head(status, {"content-length": str(len(body))}, headers) + body)
        self._state = "done"
        await self._writer.drain()

    async def start_stream(self, status: int, headers: Mapping[str, str]) -> None:
        """Send the head of a response whose body follows in chunks (chunked encoding)."""
        self._writer.write(self._head(status, {"transfer-encoding": "chunked"}, headers))
        self._state = "streaming"
        await self._writer.drain()

    async def send_chunk(self, data: bytes) -> None:
        """Send one chunk now, so the client can read it before the next one exists."""
        if data:  # an empty chunk would end the body
            self._writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await self._writer.drain()

    async def end_stream(self) -> None:
        self._writer.write(b"0\r\n\r\n")
        self._state = "done"
        await self._writer.drain()

    def drop(self) -> None:
        """Close the connection now: before the response, or in the middle of a stream."""
        self._state = "dropped"
        self._writer.close()

    def _head(
        self, status: int, defaults: Mapping[str, str], headers: Mapping[str, str]
    ) -> bytes:
        merged = {name.lower(): (name, value) for name, value in defaults.items()}
        merged.update((name.lower(), (name, value)) for name, value in headers.items())
        if not self._keep_alive:
            merged["connection"] = ("Connection", "close")
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = "Unknown"
        lines = [f"HTTP/1.1 {status} {reason}"]
        lines += [f"{name}: {value}" for name, value in merged.values()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


Handler = Callable[[HttpRequest, HttpResponse], Awaitable[None]]


class HttpServer:
    """Serves ``handler`` on a TCP port; ``close`` also ends every open keep-alive connection."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> int:
        """Start listening and return the bound port (useful when ``port`` is 0)."""
        self._server = await asyncio.start_server(
            self._serve_connection, host, port, backlog=_BACKLOG, limit=_MAX_LINE
        )
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        # Closing a transport finishes on the next loop iteration; let that happen before the
        # caller stops the loop, or the sockets leak as ResourceWarnings.
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._serve_requests(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; nothing to answer
        except asyncio.CancelledError:
            # Only close() cancels these tasks. Ending quietly matters: on 3.11 asyncio logs the
            # CancelledError of a cancelled connection callback as an error.
            pass
        finally:
            self._connections.discard(task)
            writer.close()

    async def _serve_requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while True:
            try:
                parsed = await _read_request(reader, writer)
            except BadRequest as error:
                body = json.dumps({"error": {"message": f"bad HTTP request: {error}"}}).encode()
                response = HttpResponse(writer, keep_alive=False)
                await response.send(400, body, {"content-type": "application/json"})
                return
            if parsed is None:
                return
            request, keep_alive = parsed
            response = HttpResponse(writer, keep_alive=keep_alive)
            try:
                await self._handler(request, response)
            except Exception as error:  # a bug in the handler: say so on the wire, not in a log
                if response.is_started:
                    response.drop()
                    return
                body = f"handler failed: {error!r}".encode()
                await response.send(500, body, {"content-type": "text/plain; charset=utf-8"})
            if not response.is_complete:
                if response.is_started:
                    response.drop()
                else:
                    await response.send(500, b"handler sent no response", {})
            if not (keep_alive and response.is_complete):
                return


async def _read_request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> tuple[HttpRequest, bool] | None:
    """Read one request; None when the client closed the connection between requests."""
    line = await _read_line(reader)
    while line in _BLANK_LINES:  # RFC 9112 2.2: ignore empty lines before a request line
        line = await _read_line(reader)
    if not line:
        return None
    try:
        method, target, version = line.decode("latin-1").split()
    except ValueError:
        raise BadRequest(f"malformed request line {line[:100]!r}") from None
    headers: dict[str, str] = {}
    for _ in range(_MAX_HEADERS):
        line = await _read_line(reader)
        if not line:
            return None
        if line in _BLANK_LINES:
            break
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon:
            raise BadRequest(f"malformed header line {line[:100]!r}")
        name, value = name.strip().lower(), value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    else:
        raise BadRequest(f"more than {_MAX_HEADERS} headers")
    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    body = await _read_body(reader, headers)
    connection = headers.get("connection", "").lower()
    if version == "HTTP/1.1":
        keep_alive = "close" not in connection
    else:
        keep_alive = "keep-alive" in connection
    path, _, query = target.partition("?")
    return HttpRequest(method.upper(), path, query, headers, body), keep_alive


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts = []
        while True:
            size_line = await _read_line(reader)
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError:
                raise BadRequest(f"malformed chunk size {size_line[:100]!r}") from None
            if size == 0:
                break
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        while (await _read_line(reader)) not in (*_BLANK_LINES, b""):
            pass  # trailers carry nothing this server uses
        return b"".join(parts)
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise BadRequest(f"malformed Content-Length {headers['content-length']!r}") from None
    return await reader.readexactly(length) if length > 0 else b""


async def _read_line(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readline()
    except ValueError:  # the stream's limit turns an overlong line into ValueError
        raise BadRequest(f"a line longer than {_MAX_LINE} bytes") from None
