"""Shared HTTP plumbing for providers: one httpx client per event loop, error classification,
server-sent events. Public so provider plugins (Anthropic, embeddings) classify errors the same
way, and the retry plugin works for all of them unchanged.

Every body is read within the provider's ``json_limits.max_bytes`` (``read_body``), and so is
every line and event of a stream (``iter_sse``): a server that never stops sending, or sends one
endless line, is a ``BadResponse``, not a process that fills its memory.
"""

from __future__ import annotations

import contextlib
import re
import time
import weakref
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from ..errors import (
    AuthError,
    BadRequest,
    BadResponse,
    ContextTooLong,
    NetworkError,
    ProviderError,
    RateLimited,
    ServerError,
)
from ..jsonlimits import DEFAULT_JSON_LIMITS, JsonLimitError, JsonLimits, loads_bounded

if TYPE_CHECKING:
    import asyncio
    import ssl

    import httpx

__all__ = ["HttpClient", "classify_status", "context_too_long", "iter_sse", "parse_retry_after", "read_body", "read_json"]


class HttpClient:
    """A provider's view of the connection pool shared per event loop and endpoint.

    Agents that talk to the same base URL with the same headers and timeout share one pool, so
    a new agent per run reuses warm connections, and 10,000 concurrent runs open at most
    ``max_connections`` sockets (the rest wait for a free connection, bounded by the run's own
    timeouts, instead of overflowing the server's accept queue and failing on connect). The pool
    is made on first use in a loop (httpx is imported then, so ``import bandoneon`` stays fast)
    and closed when its last user closes.
    """

    #: Connections one shared pool opens at most (per event loop and endpoint).
    max_connections: int = 512
    #: Connections per httpx client inside the pool (see ``_Pool`` for why it is small).
    shard_size: int = 8

    def __init__(
        self, *, base_url: str, headers: dict[str, str], timeout: float, provider: str, json_limits: JsonLimits = DEFAULT_JSON_LIMITS
    ):
        self.base_url = base_url.rstrip("/")
        self.json_limits = json_limits
        self.headers = headers
        self.timeout = timeout
        self.provider = provider
        self._shared: _Pool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _pool(self) -> _Pool:
        import asyncio

        loop = asyncio.get_running_loop()
        if self._shared is None or self._loop is not loop:
            key = (self.base_url, tuple(sorted(self.headers.items())), self.timeout, self.max_connections, self.shard_size)
            pools = _pools_by_loop.setdefault(loop, {})
            shared = pools.get(key)
            if shared is None or shared.is_closed:
                # Plain-http servers (local models) need no TLS context.
                tls = not self.base_url.startswith("http://")
                shared = pools[key] = _Pool(self._new_client, self.max_connections, self.shard_size, tls=tls)
            shared.users += 1
            self._shared, self._loop = shared, loop
        return self._shared

    def _new_client(self, verify: ssl.SSLContext | bool) -> httpx.AsyncClient:
        import httpx

        return httpx.AsyncClient(
            headers=self.headers,
            # pool=None: waiting for a free connection is bounded by the run's timeouts, not here.
            timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0), pool=None),
            limits=httpx.Limits(max_connections=self.shard_size, max_keepalive_connections=self.shard_size),
            verify=verify,
        )

    def url(self, path: str) -> str:
        """An absolute URL for ``path`` (cheaper for httpx than merging with its base URL)."""
        return path if "://" in path else self.base_url + path

    @contextlib.asynccontextmanager
    async def stream(self, method: str, path: str, *, json: Any) -> AsyncIterator[httpx.Response]:
        """A streamed response; its connection counts against the pool until the block ends."""
        async with self._pool().slot() as client, client.stream(method, self.url(path), json=json) as response:
            yield response

    async def aclose(self) -> None:
        """Stop using the shared pool; the last of its users closes it."""
        shared, self._shared = self._shared, None
        if shared is None:
            return
        shared.users -= 1
        if shared.users <= 0:
            await shared.aclose()

    async def post_json(self, path: str, body: dict[str, Any]) -> Any:
        """POST and return the decoded JSON; every failure as a classified ``ProviderError``."""
        import httpx

        try:
            async with self._pool().slot() as client, client.stream("POST", self.url(path), json=body) as response:
                content = await read_body(response, self.provider, self.json_limits)
        except httpx.TimeoutException as exc:
            raise NetworkError(f"{self.provider}: the request to {self.url(path)} timed out ({type(exc).__name__})", provider=self.provider) from None
        except httpx.TransportError as exc:
            raise NetworkError(f"{self.provider}: cannot reach {self.url(path)}: {str(exc) or type(exc).__name__}", provider=self.provider) from None
        if response.status_code >= 400:
            raise classify_status(response.status_code, response.headers, content.decode("utf-8", "replace"), self.provider, self.json_limits)
        return read_json(content, self.provider, self.json_limits)

    async def get_json(self, path: str) -> Any | None:
        """GET a JSON document; None on any failure (used for optional metadata)."""
        import httpx

        try:
            async with self._pool().slot() as client, client.stream("GET", self.url(path)) as response:
                if response.status_code != 200:
                    return None
                return loads_bounded(await read_body(response, self.provider, self.json_limits), self.json_limits)
        except (httpx.HTTPError, ProviderError, ValueError):
            return None


class _Pool:
    """One endpoint's connections in one event loop: small httpx clients behind one gate.

    Why not one httpx client with ``max_connections``: its pool does work in proportion to its
    connections (a ``poll()`` per idle one) and to its queued requests on every request and
    every response, so 10,000 concurrent runs through one pool of 512 spent more time in that
    bookkeeping than on the wire (0.4x the throughput of a client per run). Here at most
    ``max_connections`` requests are admitted at once and each goes to the least busy client
    of ``shard_size`` connections, which therefore always has one free: every httpx pool stays
    small and its queue empty. Sequential runs all land on the first client and reuse its warm
    connections.
    """

    def __init__(self, make_client: Callable[[ssl.SSLContext | bool], httpx.AsyncClient], max_connections: int, shard_size: int, *, tls: bool):
        import asyncio

        self._make_client = make_client
        self._gate = asyncio.Semaphore(max_connections)
        self._shard_size = min(shard_size, max_connections)
        self._clients: list[httpx.AsyncClient] = []
        self._busy: list[int] = []
        self._tls = tls
        self._verify: ssl.SSLContext | bool | None = None
        self.is_closed = False
        self.users = 0

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[httpx.AsyncClient]:
        """A client with a free connection, held for the block (admission waits at the gate)."""
        async with self._gate:
            busy = self._busy
            index = busy.index(min(busy)) if busy else 0
            if not busy or busy[index] >= self._shard_size:
                index = len(self._clients)
                self._clients.append(self._make_client(self._ssl()))
                busy.append(0)
            busy[index] += 1
            try:
                yield self._clients[index]
            finally:
                busy[index] -= 1

    def _ssl(self) -> ssl.SSLContext | bool:
        """One TLS context for all the clients (each costs ~60 ms to build); none for plain http."""
        if self._verify is None:
            import httpx

            self._verify = httpx.create_ssl_context() if self._tls else False
        return self._verify

    async def aclose(self) -> None:
        self.is_closed = True
        for client in self._clients:
            await client.aclose()


# Per event loop (a client cannot outlive or cross its loop); a closed loop's entry goes with it.
_pools_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], _Pool]] = weakref.WeakKeyDictionary()


async def read_body(response: httpx.Response, provider: str, limits: JsonLimits = DEFAULT_JSON_LIMITS) -> bytes:
    """The body of a streamed ``response``, read within ``limits.max_bytes``: refused (a
    ``BadResponse``) as soon as it is declared or found to be longer, before the rest is read."""
    limit = limits.max_bytes
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadResponse(f"{provider}: the server's reply was refused: it is {declared} bytes long, over the limit of {limit}", provider=provider)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise BadResponse(f"{provider}: the server's reply was refused: it is over the limit of {limit} bytes", provider=provider)
        chunks.append(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_json(content: bytes, provider: str, limits: JsonLimits = DEFAULT_JSON_LIMITS) -> Any:
    """A reply body as JSON within ``limits``; ``BadResponse`` when it is not JSON or crosses them."""
    try:
        return loads_bounded(content, limits)
    except JsonLimitError as exc:
        raise BadResponse(f"{provider}: the server's reply was refused: {exc}", provider=provider) from None
    except ValueError:
        preview = content[:80].decode("utf-8", "replace")
        raise BadResponse(f"{provider}: the server's reply is not JSON: {preview!r}", provider=provider) from None


def classify_status(status: int, headers: Any, text: str, provider: str, limits: JsonLimits = DEFAULT_JSON_LIMITS) -> ProviderError:
    """The typed error for an HTTP error status, with the server's own message when it sent one."""
    error = _error_object(text, limits)
    detail = _error_message(error, text, headers.get("content-type"))
    message = f"{provider}: HTTP {status}" + (f": {detail}" if detail else "")
    retry_after = parse_retry_after(headers.get("retry-after"))
    if status == 429:
        return RateLimited(message, retry_after=retry_after, status=status, provider=provider)
    if status >= 500:
        return ServerError(message, retry_after=retry_after, status=status, provider=provider)
    if status in (401, 403):
        return AuthError(message + " (check the API key)", status=status, provider=provider)
    if status == 408:
        return NetworkError(message, status=status, provider=provider)
    said = text if error is _NOT_JSON else error  # a plain-text body can say it too
    return context_too_long(said, message, status=status, provider=provider) or BadRequest(message, status=status, provider=provider)


#: How servers say a request is longer than the model's window: OpenAI and vLLM (and OpenAI's
#: error code), Anthropic, llama.cpp's server (and its error type), LM Studio.
_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|maximum model length|configured limit of|prompt is too long"
    r"|exceed_context_size|exceeds the available context size|greater than the context length|when context the overflows",
    re.IGNORECASE,
)
#: Where each of them names the window. At most nine digits: a longer number is no window.
_WINDOW = re.compile(
    r"(?:maximum context length is|maximum model length of|configured limit of|tokens >|available context size \(|n_ctx:|context length of only)"
    r" ?(\d{1,9})\b",
    re.IGNORECASE,
)


def context_too_long(error: Any, message: str, *, status: int | None = None, provider: str | None = None) -> ContextTooLong | None:
    """``message`` as a ``ContextTooLong`` when the server's ``error`` (its JSON error object, or
    its text) says the request was longer than the model's window; None for any other error.
    The window is the one it names (llama.cpp's ``n_ctx`` field, else the message), when positive."""
    fields = error if isinstance(error, dict) else {}
    said = " ".join(str(fields.get(key) or "") for key in ("message", "code", "type")) if fields else str(error or "")
    if not _OVERFLOW.search(said):
        return None
    named = fields.get("n_ctx")
    found = _WINDOW.search(said)
    window = named if type(named) is int else int(found.group(1)) if found else None
    return ContextTooLong(message, window=window if window is not None and 0 < window < 10**9 else None, status=status, provider=provider)


#: What ``_error_object`` returns for a body that is not JSON (``null`` is an error object too).
_NOT_JSON = object()


def _error_object(text: str, limits: JsonLimits) -> Any:
    """The error a body holds: its ``error`` member, else the whole document (``_NOT_JSON`` if none)."""
    try:
        data = loads_bounded(text, limits)
    except ValueError:
        return _NOT_JSON
    return data.get("error", data) if isinstance(data, dict) else data


def _error_message(error: Any, text: str, content_type: str | None) -> str:
    if error is _NOT_JSON:
        # An HTML error page from a proxy, a plain-text 404: one line, never the whole page.
        if not text.strip():
            return ""
        start = " ".join(text.split())[:80]
        return f"{(content_type or 'no content type').split(';')[0]} body {start!r}"
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or "")[:300]
    return str(error)[:300]


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds from now: delta-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a zone offset past a C int
        return None
    return max(0.0, when.timestamp() - time.time())


_LINE_END = re.compile(r"\r\n|\r|\n")


async def iter_sse(response: httpx.Response, limits: JsonLimits = DEFAULT_JSON_LIMITS, provider: str = "the server") -> AsyncIterator[tuple[str | None, str]]:
    """Yield ``(event, data)`` for each server-sent event of a streaming response. A line or an
    event's data longer than ``limits.max_bytes`` characters is a ``BadResponse``: lines are
    split here (CR, LF or CRLF, as the format says), so nothing waits unbounded for a line end.
    The whole stream is bounded the same way as a whole body: a server that sends small events
    (or comments) without end is refused, not assembled into a reply that fills the memory."""
    limit = limits.max_bytes
    event: str | None = None
    data: list[str] = []
    size = 0
    total = 0
    rest = ""
    opening = True
    async for text in response.aiter_text():
        if opening and text:
            # The format ignores one U+FEFF at the start of a stream; kept, it hid the first
            # event's ``data:`` line (some proxies write a UTF-8 byte-order mark first).
            opening = False
            if text[0] == "\ufeff":
                text = text[1:]
        buffer = rest + text
        # A CR at the very end may be the first half of a CRLF: kept until the next piece.
        held = buffer.endswith("\r")
        *lines, rest = _LINE_END.split(buffer[:-1] if held else buffer)
        if held:
            rest += "\r"
        if len(rest) > limit:
            raise BadResponse(f"{provider}: the stream was refused: a line is over the limit of {limit} characters", provider=provider)
        for line in lines:
            if not line:
                if data:
                    yield event, "\n".join(data)
                event, data, size = None, [], 0
            elif line.startswith("data:"):
                size += len(line)
                if size > limit:
                    raise BadResponse(f"{provider}: the stream was refused: an event is over the limit of {limit} characters", provider=provider)
                data.append(line[5:].lstrip(" "))
            elif line.startswith("event:"):
                event = line[6:].strip()
        total += len(text)
        if total > limit:
            raise BadResponse(f"{provider}: the stream was refused: its events are over the limit of {limit} characters in all", provider=provider)
    last = rest.rstrip("\r")
    if last.startswith("data:"):
        data.append(last[5:].lstrip(" "))
    if data:
        yield event, "\n".join(data)
