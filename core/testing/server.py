"""A loopback mock LLM server for tests and benchmarks.

It speaks three wire formats on 127.0.0.1 (OpenAI chat completions, the Anthropic Messages API
and OpenAI embeddings), answers from a FIFO queue of scripted ``Reply`` and ``Fault`` items, and
records every request. It runs its own event loop in a daemon thread, so sync tests, async tests
and benchmarks can all point a real HTTP client at ``server.base_url``.

This module imports nothing else from bandoneon, so it works on its own as a test fixture.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs

from ..ranges import in_range
from ._http import HttpRequest, HttpResponse, HttpServer
from ._wire import ANTHROPIC, OPENAI, Dialect, Turn, base64_floats, hashed_embedding

__all__ = ["Fault", "MockLLMServer", "RecordedRequest", "Reply"]

ToolArgs = Mapping[str, Any] | str


def _tool_calls(calls: Sequence[Sequence[Any]]) -> tuple[tuple[str | None, str, ToolArgs], ...]:
    """Normalise ``(name, args)`` and ``(id, name, args)`` to ``(id or None, name, args)``."""
    normalised = []
    for call in calls:
        if isinstance(call, str | bytes) or len(call) not in (2, 3):
            raise ValueError(f"a tool call is (name, args) or (id, name, args), got {call!r}")
        call_id, name, args = (None, *call) if len(call) == 2 else tuple(call)
        if not isinstance(name, str) or not isinstance(args, Mapping | str):
            raise TypeError(f"tool call {call!r}: the name must be a str, the args a dict or a str")
        normalised.append((call_id, name, args))
    return tuple(normalised)


def _thinking(blocks: Sequence[Sequence[str]]) -> tuple[tuple[str, str], ...]:
    normalised = tuple(tuple(block) for block in blocks)
    for block in normalised:
        if len(block) != 2 or not all(isinstance(part, str) for part in block):
            raise ValueError(f"a thinking block is (text, signature), got {block!r}")
    return normalised  # type: ignore[return-value]


def _usage(usage: Sequence[int] | None) -> tuple[int, int] | None:
    if usage is None:
        return None
    if len(usage) != 2:
        raise ValueError(f"usage is (prompt_tokens, completion_tokens), got {usage!r}")
    return (usage[0], usage[1])


_non_negative = in_range(at_least=0)


@attrs.frozen
class Reply:
    """A scripted model answer, rendered in the wire format of the endpoint that receives it.

    ``tool_calls`` holds ``(name, args)`` or ``(id, name, args)``; dict args are sent as JSON,
    str args verbatim (to send broken JSON on purpose). ``finish_reason=None`` means the usual
    value for the content; ``usage=None`` means a rough count from the request and text.
    ``thinking`` is ``(text, signature)`` blocks: the Anthropic format sends them as thinking
    blocks, the OpenAI format as one reasoning text in ``reasoning_field`` (``reasoning_content``
    as vLLM, llama.cpp and DeepSeek send it, or ``reasoning`` as Ollama does).
    ``cut_stream_after=n`` sends n stream events and then drops the connection.
    ``hold_stream_after=n`` sends n stream events, then waits for ``server.release()`` before
    the rest: a reply still coming in, for testing what a UI shows meanwhile.
    """

    text: str | None = None
    tool_calls: tuple[tuple[str | None, str, ToolArgs], ...] = attrs.field(
        default=(), converter=_tool_calls
    )
    finish_reason: str | None = None
    usage: tuple[int, int] | None = attrs.field(default=None, converter=_usage)
    cached_tokens: int = attrs.field(default=0, validator=_non_negative)
    thinking: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_thinking)
    delay: float = attrs.field(default=0, validator=_non_negative)
    cut_stream_after: int | None = attrs.field(
        default=None, validator=in_range(at_least=0, optional=True)
    )
    hold_stream_after: int | None = attrs.field(
        default=None, validator=in_range(at_least=0, integer=True, optional=True)
    )
    model: str | None = None
    reasoning_field: str = attrs.field(default="reasoning_content", validator=attrs.validators.in_(("reasoning_content", "reasoning")))


@attrs.frozen
class Fault:
    """A scripted failure: an error status, a body that is not what the client expects, a
    dropped connection, or an error event in the middle of a stream.

    ``status=None`` means 500; ``body=None`` means a JSON error in the endpoint's own shape.
    A queued fault that sets nothing but ``delay`` is a pause: the request waits, then gets the
    next queued item.
    """

    status: int | None = attrs.field(
        default=None,
        validator=in_range(at_least=100, at_most=599, integer=True, optional=True),
    )
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=dict)
    body: str | bytes | None = None
    delay: float = attrs.field(default=0, validator=_non_negative)
    drop: bool = False
    stream_error: str | None = None


@attrs.frozen
class RecordedRequest:
    """One request as the server received it; ``json`` is None when the body is not JSON."""

    method: str
    path: str
    headers: Mapping[str, str]
    json: Any
    body: bytes


Responder = Callable[[RecordedRequest], "Reply | Fault | Awaitable[Reply | Fault]"]


def _is_pause(fault: Fault) -> bool:
    return fault.delay > 0 and attrs.evolve(fault, delay=0) == Fault()


class MockLLMServer:
    """A scripted LLM server on 127.0.0.1: queue replies and faults, point a client at
    ``base_url``, then read back what the client sent.

    Use it as ``with MockLLMServer() as server:`` or ``async with``, or call ``start`` and
    ``stop``. ``model`` and ``embedding_dimensions`` may be set at any time.
    """

    # Set by reset() (also from __init__), changed by respond_with() and model_info().
    _responder: Responder | None
    _context_window: int | None
    _model_info_style: str | None

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._http: HttpServer | None = None
        self._port: int | None = None
        self._routes = {
            ("POST", "/v1/chat/completions"): self._serve_chat,
            ("POST", "/v1/messages"): self._serve_chat,
            ("POST", "/v1/embeddings"): self._serve_embeddings,
            ("GET", "/v1/models"): self._serve_models,
            ("GET", "/props"): self._serve_props,
        }
        self.reset()

    def __repr__(self) -> str:
        return f"<MockLLMServer {self.url if self._port else 'stopped'}>"

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> MockLLMServer:
        """Start the server thread and bind an ephemeral port; returns once it accepts."""
        if self._thread is not None:
            raise RuntimeError("MockLLMServer is already running; stop() it before start()")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="MockLLMServer", daemon=True)
        thread.start()
        http_server = HttpServer(self._handle)
        try:
            bind = http_server.start("127.0.0.1", 0)
            self._port = asyncio.run_coroutine_threadsafe(bind, loop).result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        self._loop, self._thread, self._http = loop, thread, http_server
        return self

    def stop(self) -> None:
        """Close every connection, stop the loop and join its thread. Does nothing if stopped."""
        loop, thread, http_server = self._loop, self._thread, self._http
        if loop is None or thread is None or http_server is None:
            return
        if threading.current_thread() is thread:
            raise RuntimeError("MockLLMServer.stop() cannot run on the server's own thread")
        self._loop = self._thread = self._http = self._port = None
        loop.call_soon_threadsafe(self._open_gates)  # a held stream must not keep the server up
        try:
            asyncio.run_coroutine_threadsafe(http_server.close(), loop).result(timeout=10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()

    def __enter__(self) -> MockLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # The async twins drive the sync ones in a worker thread: the work happens on the server's
    # own thread either way, and waiting for it there keeps the caller's loop free.
    async def __aenter__(self) -> MockLLMServer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.to_thread(self.stop)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        if self._port is None:
            raise RuntimeError("MockLLMServer is not running: call start() or use `with` first")
        return f"http://127.0.0.1:{self._port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the base URL OpenAI- and Anthropic-style clients take."""
        return f"{self.url}/v1"

    # -- scripting --------------------------------------------------------------------------

    def add(self, *items: Reply | Fault) -> None:
        """Queue replies and faults; each request takes the oldest one."""
        for item in items:
            if not isinstance(item, Reply | Fault):
                raise TypeError(f"MockLLMServer.add() takes Reply or Fault items, got {item!r}")
        with self._lock:
            self._queue.extend(items)

    def respond_with(self, responder: Responder | None) -> None:
        """Answer chat requests with ``responder(request)`` whenever the queue is empty.

        It may be sync or async and returns a Reply or a Fault; it runs on the server's own
        event loop, so it must not block nor touch another loop's objects. None removes it.
        """
        self._responder = responder

    def release(self) -> None:
        """Let the streams held by ``Reply(hold_stream_after=n)`` send the rest of their reply."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._open_gates)

    def _open_gates(self) -> None:
        for gate in self._gates:
            gate.set()
        self._gates.clear()

    def model_info(self, *, context_window: int, style: str = "vllm") -> None:
        """Report ``context_window`` like vLLM (``max_model_len`` in ``GET /v1/models``) or
        like llama.cpp (``n_ctx`` in ``GET /props``)."""
        if style not in ("vllm", "llamacpp"):
            raise ValueError(f"model_info style is 'vllm' or 'llamacpp', got {style!r}")
        self._context_window, self._model_info_style = context_window, style

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def assert_all_used(self) -> None:
        """Fail, listing them, if queued items were never served."""
        with self._lock:
            unused = list(self._queue)
        if unused:
            listing = "\n".join(f"  {item!r}" for item in unused)
            count = len(unused)
            raise AssertionError(f"MockLLMServer: {count} queued item(s) never used:\n{listing}")

    def reset(self) -> None:
        """Back to a fresh server's state: empty queue and history, no responder, no model
        info, default model and dimensions, tool-call ids counting from 1 again."""
        with self._lock:
            self._queue: deque[Reply | Fault] = deque()
            self._requests: list[RecordedRequest] = []
        self._responder = None
        self._context_window = None
        self._model_info_style = None
        self._gates: list[asyncio.Event] = []
        self._tool_ids = itertools.count(1)
        self._message_ids = itertools.count(1)
        self.model = "mock-model"
        self.embedding_dimensions = 64

    # -- serving (on the server thread) -----------------------------------------------------

    async def _handle(self, request: HttpRequest, response: HttpResponse) -> None:
        recorded = RecordedRequest(
            request.method, request.path, dict(request.headers), _parse_json(request.body),
            request.body,
        )
        with self._lock:
            self._requests.append(recorded)
        dialect = ANTHROPIC if request.path == "/v1/messages" else OPENAI
        route = self._routes.get((request.method, request.path))
        if route is None:
            message = f"MockLLMServer: no endpoint {request.method} {request.path}"
            await _send_error(response, dialect, 404, message)
        elif request.method == "POST" and not isinstance(recorded.json, dict):
            message = f"MockLLMServer: the body of POST {request.path} is not a JSON object"
            await _send_error(response, dialect, 400, message)
        else:
            await route(recorded, dialect, response)

    async def _next_answer(
        self, recorded: RecordedRequest, *, takes_replies: bool
    ) -> Reply | Fault | None:
        """The oldest queued item this endpoint takes (embeddings take only faults), else the
        responder's answer; a pause sleeps and hands the request to the item after it."""
        while True:
            with self._lock:
                head = self._queue[0] if self._queue else None
                if isinstance(head, Reply) and not takes_replies:
                    head = None
                if head is not None:
                    self._queue.popleft()
            if head is None:
                break
            if not (isinstance(head, Fault) and _is_pause(head)):
                return head
            await asyncio.sleep(head.delay)
        responder = self._responder
        if not takes_replies or responder is None:
            return None
        answer = responder(recorded)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, Reply | Fault):
            raise TypeError(f"the respond_with function returned {answer!r}, not a Reply or Fault")
        return answer

    async def _serve_chat(
        self, recorded: RecordedRequest, dialect: Dialect, response: HttpResponse
    ) -> None:
        is_stream = recorded.json.get("stream") is True
        try:
            answer = await self._next_answer(recorded, takes_replies=True)
        except Exception as error:
            message = f"MockLLMServer: the respond_with function failed: {error!r}"
            await _send_error(response, dialect, 500, message)
            return
        if answer is None:
            message = f"MockLLMServer: no reply queued for {recorded.method} {recorded.path}"
            await _send_error(response, dialect, 500, message)
        elif isinstance(answer, Fault):
            await self._serve_fault(answer, recorded, dialect, response, is_stream=is_stream)
        else:
            await asyncio.sleep(answer.delay)
            turn = self._turn(answer, recorded.json, dialect)
            if is_stream:
                events = dialect.stream(turn, recorded.json)
                if answer.hold_stream_after is not None:
                    gate = asyncio.Event()
                    self._gates.append(gate)
                    await _send_stream(response, events[: answer.hold_stream_after], None, end=False)
                    await gate.wait()
                    events = events[answer.hold_stream_after :]
                    await _send_stream(response, events, answer.cut_stream_after, start=False)
                else:
                    await _send_stream(response, events, answer.cut_stream_after)
            else:
                await _send_json(response, 200, dialect.complete(turn))

    async def _serve_fault(
        self,
        fault: Fault,
        recorded: RecordedRequest,
        dialect: Dialect,
        response: HttpResponse,
        *,
        is_stream: bool,
    ) -> None:
        await asyncio.sleep(fault.delay)
        if fault.drop:
            response.drop()
            return
        if fault.stream_error is not None and is_stream:
            turn = self._turn(Reply(), recorded.json, dialect)
            await _send_stream(response, dialect.stream_error(turn, fault.stream_error), None)
            return
        status = fault.status or 500
        if fault.body is None:
            message = f"MockLLMServer: injected fault (HTTP {status})"
            body = json.dumps(dialect.error_body(status, message, fault.stream_error)).encode()
        else:
            body = fault.body.encode() if isinstance(fault.body, str) else fault.body
        await response.send(status, body, {"content-type": "application/json", **fault.headers})

    def _turn(self, reply: Reply, request_body: Mapping[str, Any], dialect: Dialect) -> Turn:
        if reply.usage is None:
            prompt_tokens = len(json.dumps(request_body.get("messages", []))) // 4
            completion_tokens = len(reply.text or "") // 4 + 1
        else:
            prompt_tokens, completion_tokens = reply.usage
        tool_ids = tuple(
            call_id or f"{dialect.tool_id_prefix}{next(self._tool_ids)}"
            for call_id, _, _ in reply.tool_calls
        )
        return Turn(
            reply=reply,
            model=reply.model or str(request_body.get("model") or self.model),
            message_id=f"{dialect.message_id_prefix}{next(self._message_ids)}",
            tool_ids=tool_ids,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            created=int(time.time()),
        )

    async def _serve_embeddings(
        self, recorded: RecordedRequest, dialect: Dialect, response: HttpResponse
    ) -> None:
        fault = await self._next_answer(recorded, takes_replies=False)
        assert not isinstance(fault, Reply)  # takes_replies=False: faults only
        if fault is not None:
            await self._serve_fault(fault, recorded, dialect, response, is_stream=False)
            return
        body = recorded.json
        texts = [body["input"]] if isinstance(body.get("input"), str) else body.get("input")
        dimensions = body.get("dimensions") or self.embedding_dimensions
        if not (isinstance(texts, list) and all(isinstance(text, str) for text in texts)):
            message = "MockLLMServer: embeddings input must be a string or a list of strings"
            await _send_error(response, dialect, 400, message)
            return
        if not (isinstance(dimensions, int) and dimensions > 0):
            message = f"MockLLMServer: dimensions must be a positive int, got {dimensions!r}"
            await _send_error(response, dialect, 400, message)
            return
        as_base64 = body.get("encoding_format") == "base64"  # the openai SDK's default
        data = []
        for index, text in enumerate(texts):
            vector = hashed_embedding(text, dimensions)
            encoded = base64_floats(vector) if as_base64 else vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(text) // 4 + 1 for text in texts)
        payload = {
            "object": "list",
            "data": data,
            "model": str(body.get("model") or self.model),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        await _send_json(response, 200, payload)

    async def _serve_models(
        self, recorded: RecordedRequest, dialect: Dialect, response: HttpResponse
    ) -> None:
        entry: dict[str, Any] = {"id": self.model, "object": "model", "owned_by": "mock"}
        if self._model_info_style == "vllm":
            entry["max_model_len"] = self._context_window
        await _send_json(response, 200, {"object": "list", "data": [entry]})

    async def _serve_props(
        self, recorded: RecordedRequest, dialect: Dialect, response: HttpResponse
    ) -> None:
        if self._model_info_style != "llamacpp":
            message = "MockLLMServer: GET /props answers only after model_info(style='llamacpp')"
            await _send_error(response, dialect, 404, message)
            return
        settings = {"n_ctx": self._context_window}
        await _send_json(response, 200, {"default_generation_settings": settings})


def _parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:  # includes JSONDecodeError and UnicodeDecodeError
        return None


async def _send_json(response: HttpResponse, status: int, payload: Any) -> None:
    await response.send(status, json.dumps(payload).encode(), {"content-type": "application/json"})


async def _send_error(response: HttpResponse, dialect: Dialect, status: int, message: str) -> None:
    await _send_json(response, status, dialect.error_body(status, message))


async def _send_stream(
    response: HttpResponse, events: list[bytes], cut_after: int | None, *, start: bool = True, end: bool = True
) -> None:
    if start:
        await response.start_stream(
            200, {"content-type": "text/event-stream", "cache-control": "no-cache"}
        )
    for event in events[:cut_after]:
        await response.send_chunk(event)
    if cut_after is not None:
        response.drop()
    elif end:
        await response.end_stream()
