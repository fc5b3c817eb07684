"""Loaded llama.cpp models, shared by every agent of a process, driven from worker threads.

A ``Llama`` object holds a 100 MB+ model and a KV cache, and is not thread-safe: each
loaded model has one lock, every generation holds it, and every call runs on a worker
thread so the event loop never blocks. Two agents asking for the same file with the same
settings share one load.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from bandoneon import BadRequest, ConfigError, ProviderError

__all__ = ["Engine", "EngineSettings", "shared_engine"]

_DONE = object()


@attrs.frozen
class EngineSettings:
    """What makes two loads of one file different (so they cannot be shared)."""

    path: str
    n_ctx: int
    n_threads: int
    chat_format: str
    n_gpu_layers: int = 0


class Engine:
    """One loaded model and the lock that serialises its generations."""

    def __init__(self, llama: Any, settings: EngineSettings):
        self.llama = llama
        self.settings = settings
        self.lock = threading.Lock()

    async def chat(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """One whole ``create_chat_completion`` on a worker thread."""

        def work() -> dict[str, Any]:
            with self.lock:
                return _guarded(lambda: self.llama.create_chat_completion(**arguments))

        return await asyncio.to_thread(work)

    async def stream(self, arguments: dict[str, Any], on_chunk: Callable[[dict[str, Any]], Any]) -> int:
        """Stream ``create_chat_completion`` chunks to ``await on_chunk(chunk)`` as they come.

        Returns the number of tokens in the context afterwards (prompt + generated), which is
        how streamed usage is counted (llama-cpp-python's chunks carry none). Cancelling the
        caller stops the generation at the next token.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()

        def send(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop closed: nobody is listening any more
                stop.set()

        def produce() -> None:
            try:
                with self.lock:
                    chunks: Iterator[dict[str, Any]] = _guarded(lambda: iter(self.llama.create_chat_completion(**arguments, stream=True)))
                    try:
                        for chunk in _guarded_iter(chunks):
                            if stop.is_set():
                                break
                            send(chunk)
                    finally:
                        close = getattr(chunks, "close", None)
                        if close is not None:
                            close()
                    send((_DONE, self.llama.n_tokens))
            except BaseException as exc:  # handed to the awaiting coroutine, raised there
                send(exc)

        producer = asyncio.ensure_future(asyncio.to_thread(produce))
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                if isinstance(item, tuple) and item and item[0] is _DONE:
                    return int(item[1])
                await on_chunk(item)
        finally:
            stop.set()
            if not producer.done():
                # Wait for the thread to let go of the lock, so the next call finds it free;
                # shielded, so a second cancellation cannot leave the model half-used.
                await asyncio.shield(producer)


def _guarded(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except ValueError as exc:  # llama-cpp-python's word for "this request cannot be served"
        raise BadRequest(f"local: {exc}", provider="local") from None
    except ProviderError:
        raise
    except Exception as exc:
        raise ProviderError(f"local: llama.cpp failed: {type(exc).__name__}: {exc}", provider="local") from exc


def _guarded_iter(chunks: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    while True:
        item = _guarded(lambda: next(chunks, _DONE))
        if item is _DONE:
            return
        yield item


_engines: dict[EngineSettings, Engine] = {}
_engines_lock = threading.Lock()


def shared_engine(settings: EngineSettings) -> Engine:
    """The process's engine for ``settings``, loading the model on first use (blocking)."""
    with _engines_lock:
        engine = _engines.get(settings)
        if engine is None:
            engine = Engine(_load(settings), settings)
            _engines[settings] = engine
        return engine


@atexit.register
def _close_all() -> None:
    """Free the models while the interpreter is whole: llama-cpp-python's ``__del__`` fails
    noisily when it runs during shutdown, after its C bindings were torn down."""
    with _engines_lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        with engine.lock:
            engine.llama.close()


def _load(settings: EngineSettings) -> Any:
    try:
        from llama_cpp import Llama
    except ImportError:
        raise ConfigError(
            "the local model needs llama-cpp-python: `pip install bandoneon-local` (or `pip install llama-cpp-python`; "
            "building it compiles llama.cpp, a few minutes)"
        ) from None
    try:
        return Llama(
            model_path=settings.path,
            chat_format=settings.chat_format,
            n_ctx=settings.n_ctx,
            n_threads=settings.n_threads,
            n_gpu_layers=settings.n_gpu_layers,
            verbose=False,
        )
    except ValueError as exc:
        raise ConfigError(f"local model: llama.cpp could not load {settings.path!r}: {exc}") from None
