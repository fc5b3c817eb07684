"""Loaded llama.cpp models (xllamacpp), shared by every agent of a process, driven from worker threads.

xllamacpp embeds llama.cpp's own server: ``Server(params)`` loads the model and
``handle_chat_completions(request, callback)`` runs one chat completion in the calling thread
(the GIL is released while it computes), handing each streamed chunk to ``callback``; the
callback's return value says whether to stop. That is how cancellation reaches generation:
every generation streams, and the callback answers ``True`` once the caller gave up, so
llama.cpp stops at the next token.

The embedded server always opens an HTTP listener (it cannot be turned off in xllamacpp
2026.10). It is bound to a Unix socket in a private temporary folder (mode 0700, removed at
exit) rather than a TCP port, so nothing on the network, and no other user, can reach it.

One lock per loaded model serialises generations: the server has one slot (so the prompt cache
of a conversation survives from turn to turn), and a cancelled request that is still waiting
for the lock gives up without ever starting.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from bandoneon import BadRequest, ConfigError, ProviderError

__all__ = ["Engine", "EngineSettings", "shared_engine"]

_DONE = object()
#: How often a request waiting for the model's lock checks whether it was cancelled.
_LOCK_POLL = 0.02


@attrs.frozen
class EngineSettings:
    """What makes two loads of one file different (so they cannot be shared)."""

    path: str
    n_ctx: int
    n_threads: int
    n_gpu_layers: int = 0


class Engine:
    """One loaded model and the lock that serialises its generations."""

    def __init__(self, server: Any, settings: EngineSettings, socket_dir: str, *, has_llguidance: bool = False):
        self.server = server
        self.settings = settings
        self.socket_dir = socket_dir
        self.has_llguidance = has_llguidance
        self.lock = threading.Lock()

    def constrained(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` with its ``json_schema`` as llama.cpp should apply it.

        Built with llguidance (xllamacpp's wheels are), the schema goes in as a grammar that
        allows no optional whitespace: the model writes ``{"tool":"f","arguments":{...}}``
        rather than pretty-printed JSON, about half the tokens for the same call.
        """
        schema = request.get("json_schema")
        if schema is None or not self.has_llguidance:
            return request
        compact = {**schema, "x-guidance": {"whitespace_flexible": False}}
        return {key: value for key, value in request.items() if key != "json_schema"} | {"grammar": "%llguidance {}\nstart: %json " + json.dumps(compact)}

    @property
    def listening_address(self) -> str:
        """Where the embedded server's HTTP listener is bound (a ``unix://`` socket path)."""
        return str(self.server.listening_address)

    async def stream(self, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        """Run one streamed chat completion, awaiting ``on_chunk(chunk)`` for each chunk.

        Cancelling the caller stops the generation at the next token (or before it starts,
        if it is still waiting for the model); this returns once llama.cpp let go, so the
        next request finds the model free.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()

        def send(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop closed: nobody is listening any more
                stop.set()

        def on_chunk_from_llama(chunk: Any) -> bool:
            if not stop.is_set():
                send(chunk)
            return stop.is_set()

        def produce() -> None:
            try:
                while not self.lock.acquire(timeout=_LOCK_POLL):
                    if stop.is_set():
                        return
                try:
                    if not stop.is_set():
                        self.server.handle_chat_completions({**self.constrained(request), "stream": True}, on_chunk_from_llama)
                finally:
                    self.lock.release()
            except BaseException as exc:  # handed to the awaiting coroutine, raised there
                send(exc)
            finally:
                send(_DONE)

        producer = asyncio.ensure_future(asyncio.to_thread(produce))
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise ProviderError(f"local: llama.cpp failed: {type(item).__name__}: {item}", provider="local") from item
                error = item.get("error") if isinstance(item, dict) else None
                if error is not None:
                    raise _error(error)
                await on_chunk(item)
        finally:
            stop.set()
            if not producer.done():
                # Wait for llama.cpp to let go (one token at most), shielded so a second
                # cancellation cannot leave the model half-used.
                await asyncio.shield(producer)


def _error(error: Any) -> ProviderError:
    """llama.cpp's error document as the provider error the loop and retry policy understand."""
    if not isinstance(error, dict):
        return ProviderError(f"local: llama.cpp failed: {error}", provider="local")
    message = str(error.get("message") or error)
    if error.get("type") == "exceed_context_size_error":
        return BadRequest(
            f"local: the prompt ({error.get('n_prompt_tokens')} tokens) does not fit the model's context window "
            f"({error.get('n_ctx')} tokens); shorten the history (the compaction plugin does) or raise n_ctx",
            provider="local",
        )
    if error.get("code") == 400:
        return BadRequest(f"local: {message}", provider="local")
    return ProviderError(f"local: llama.cpp failed: {message}", provider="local")


_engines: dict[EngineSettings, Engine] = {}
_engines_lock = threading.Lock()


def shared_engine(settings: EngineSettings) -> Engine:
    """The process's engine for ``settings``, loading the model on first use (blocking)."""
    with _engines_lock:
        engine = _engines.get(settings)
        if engine is None:
            engine = _load(settings)
            _engines[settings] = engine
        return engine


def loaded(settings: EngineSettings) -> bool:
    """Whether ``settings`` is already loaded in this process (so using it costs no load)."""
    return settings in _engines


@atexit.register
def _close_all() -> None:
    """Stop the servers while the interpreter is whole, and remove their socket folders."""
    with _engines_lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        with engine.lock:
            engine.server = None  # the Server's destructor stops its loop thread
        shutil.rmtree(engine.socket_dir, ignore_errors=True)


def import_xllamacpp() -> Any:
    """``xllamacpp``, or a ``ConfigError`` that names the command fixing what is missing."""
    if not _cpu_has_avx2():
        raise ConfigError("the local model needs a CPU with AVX2 (xllamacpp's prebuilt llama.cpp uses it); run bandoneon against a model server instead (see the README)")
    try:
        import xllamacpp
    except ImportError as exc:
        if "libgomp" in str(exc):
            raise ConfigError("the local model needs the system library libgomp1: `sudo apt-get install libgomp1` (Debian/Ubuntu)") from None
        raise ConfigError("the local model needs xllamacpp: `pip install xllamacpp` (or `pip install bandoneon-local`)") from None
    return xllamacpp


def _cpu_has_avx2() -> bool:
    """False only when /proc/cpuinfo says so: an AVX2-less CPU would die on an illegal instruction."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return " avx2" in line
    except OSError:
        pass
    return True


def _load(settings: EngineSettings) -> Engine:
    xllamacpp = import_xllamacpp()
    params = xllamacpp.CommonParams()
    params.model.path = settings.path
    params.n_ctx = settings.n_ctx
    params.n_parallel = 1
    params.n_gpu_layers = settings.n_gpu_layers
    params.cpuparams.n_threads = settings.n_threads
    params.cpuparams_batch.n_threads = settings.n_threads
    params.verbosity = -1
    params.warmup = False  # a warm-up generation costs a second of the first load and buys nothing here
    socket_dir = tempfile.mkdtemp(prefix="bandoneon-local-")  # mode 0700
    params.hostnames = [os.path.join(socket_dir, "llama.sock")]
    params.api_keys = [os.urandom(16).hex()]  # the listener refuses anyone without it (this process never uses it)
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:
        shutil.rmtree(socket_dir, ignore_errors=True)
        raise ConfigError(f"local model: llama.cpp could not load {settings.path!r} ({exc}); is it a GGUF chat model this llama.cpp supports?") from None
    has_llguidance = xllamacpp.json_schema_to_grammar('{"type": "string"}').startswith("%llguidance")
    return Engine(server, settings, socket_dir, has_llguidance=has_llguidance)
