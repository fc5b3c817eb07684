"""A server that never stops sending: a reply body, an error body, a stream line or a stream event
without end is refused once it passes the provider's ``json_limits.max_bytes`` (a ``BadResponse``
naming the limit), so the agent's memory stays bounded and the run ends with the error. The
server is a real socket on 127.0.0.1 that writes until the client hangs up."""

from __future__ import annotations

import asyncio
import contextlib

import bandoneon
import pytest
from bandoneon.providers.openai import OpenAICompatible

LIMIT = 64 * 1024  # the provider's max_bytes here: the server sends far more than this


class EndlessServer:
    """Answers each request with ``head`` (status line and headers), then ``start``, then
    ``chunk`` again and again until the client hangs up; counts what it managed to send."""

    def __init__(self, head: bytes, start: bytes, chunk: bytes):
        self.head, self.start, self.chunk = head, start, chunk
        self.sent = 0

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while await reader.readline() not in (b"\r\n", b""):
                pass  # the request's headers; its body is not needed
            writer.write(self.head + self.start)
            while self.sent < 200 * LIMIT:  # a bound for the test itself, far past the limit
                writer.write(self.chunk)
                self.sent += len(self.chunk)
                await writer.drain()
        writer.close()


def _agent(base_url: str, *, stream: bool) -> bandoneon.Agent:
    provider = OpenAICompatible("m", base_url=base_url, json_limits=bandoneon.JsonLimits(max_bytes=LIMIT), timeout=30)
    agent = bandoneon.Agent(provider, plugins=[], context_files=False)
    if stream:
        agent.on("text_delta", lambda event: None)  # a delta listener turns streaming on
    return agent


CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


@pytest.mark.parametrize(
    ("server", "stream", "refused"),
    [
        pytest.param(EndlessServer(CHUNKED % b"application/json", _chunk(b'{"choices": ["'), _chunk(b"x" * 4096)), False, "reply", id="endless-body"),
        pytest.param(EndlessServer(CHUNKED.replace(b"200 OK", b"500 Oops") % b"text/plain", b"", _chunk(b"x" * 4096)), False, "reply", id="endless-error-body"),
        pytest.param(EndlessServer(CHUNKED % b"text/event-stream", _chunk(b"data: {"), _chunk(b"x" * 4096)), True, "line", id="endless-stream-line"),
        pytest.param(EndlessServer(CHUNKED % b"text/event-stream", b"", _chunk(b'data: "x"\n' * 400)), True, "event", id="endless-stream-event"),
        pytest.param(EndlessServer(CHUNKED.replace(b"200 OK", b"503 Busy") % b"text/plain", b"", _chunk(b"x" * 4096)), True, "reply", id="endless-stream-error-body"),
    ],
)
async def test_an_endless_answer_is_refused_past_the_limit(server, stream, refused):
    async with server as base_url:
        agent = _agent(base_url, stream=stream)
        with pytest.raises(bandoneon.BadResponse, match=f"over the limit of {LIMIT}") as caught:
            await agent.run("hello")
        await agent.aclose()
    assert refused in str(caught.value)
    assert server.sent < 100 * LIMIT  # the client hung up soon after the limit, not at the test's own bound
    assert agent.messages == [] or [m.role for m in agent.messages] == ["user"]


async def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_read():
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (10**12)
    server = EndlessServer(head, b"", b"x" * 4096)
    async with server as base_url:
        agent = _agent(base_url, stream=False)
        with pytest.raises(bandoneon.BadResponse, match=f"1000000000000 bytes long, over the limit of {LIMIT}"):
            await agent.run("hello")
        await agent.aclose()
