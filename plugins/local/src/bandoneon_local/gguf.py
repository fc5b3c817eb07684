"""Just enough of the GGUF format to check a model file before llama.cpp loads it.

llama.cpp answers a wrong file with a bare ``ValueError: Failed to load model from file``
and C-level log lines; reading the header ourselves lets us say *which* path is wrong and
*why* (missing, not a GGUF, no chat template) without loading 100 MB of weights.
Layout (versions 2 and 3): ``b"GGUF"``, uint32 version, uint64 tensor count, uint64
key/value count, then the key/value pairs, little-endian.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

from bandoneon import ConfigError

__all__ = ["read_metadata"]

_MAGIC = b"GGUF"
# value type -> struct format of one scalar (8 = string, 9 = array are handled apart)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class _Truncated(Exception):
    pass


def read_metadata(path: Path) -> dict[str, Any]:
    """The scalar and string metadata of the GGUF file at ``path`` (arrays are skipped).

    Raises ``ConfigError`` naming the path when the file is missing or is not a GGUF model.
    Arrays (the vocabulary) are skipped, not decoded: a header read takes milliseconds.
    """
    if not path.exists():
        raise ConfigError(f"local model: no file at {str(path)!r}; pass the path of a .gguf chat model, e.g. 'local:/models/qwen2.5-0.5b-instruct-q4_k_m.gguf'")
    if not path.is_file():
        raise ConfigError(f"local model: {str(path)!r} is a directory, not a .gguf model file")
    found: dict[str, Any] = {}
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
            if magic != _MAGIC:
                raise ConfigError(
                    f"local model: {str(path)!r} is not a GGUF model file (it starts with {magic!r}, a GGUF file starts with b'GGUF'); "
                    "llama.cpp needs a .gguf file — convert the model or download its GGUF build"
                )
            (version,) = _read(handle, "<I")
            if version not in (2, 3):
                raise ConfigError(f"local model: {str(path)!r} is GGUF version {version}; only versions 2 and 3 are supported (re-convert it with a current llama.cpp)")
            _tensors, count = _read(handle, "<QQ")
            for _ in range(count):
                key = _read_string(handle)
                (value_type,) = _read(handle, "<I")
                if value_type == _ARRAY:
                    _skip_value(handle, value_type)
                else:
                    found[key] = _read_value(handle, value_type)
    except _Truncated:
        raise ConfigError(f"local model: {str(path)!r} is not a usable GGUF model file: its header is cut short (an incomplete download?)") from None
    except (UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"local model: {str(path)!r} is not a usable GGUF model file: its header is corrupt ({exc})") from None
    return found


def _read(handle: BinaryIO, fmt: str) -> tuple[Any, ...]:
    size = struct.calcsize(fmt)
    data = handle.read(size)
    if len(data) != size:
        raise _Truncated
    return struct.unpack(fmt, data)


def _read_string(handle: BinaryIO) -> str:
    (length,) = _read(handle, "<Q")
    data = handle.read(length)
    if len(data) != length:
        raise _Truncated
    return data.decode("utf-8")


def _read_value(handle: BinaryIO, value_type: int) -> Any:
    if value_type == _STRING:
        return _read_string(handle)
    fmt = _SCALARS.get(value_type)
    if fmt is None:
        raise ValueError(f"unknown metadata value type {value_type}")
    return _read(handle, fmt)[0]


def _skip_value(handle: BinaryIO, value_type: int) -> None:
    if value_type == _STRING:
        (length,) = _read(handle, "<Q")
        handle.seek(length, 1)
    elif value_type == _ARRAY:
        item_type, count = _read(handle, "<IQ")
        if item_type in _SCALARS:
            handle.seek(struct.calcsize(_SCALARS[item_type]) * count, 1)
        else:
            for _ in range(count):
                _skip_value(handle, item_type)
    elif value_type in _SCALARS:
        handle.seek(struct.calcsize(_SCALARS[value_type]), 1)
    else:
        raise ValueError(f"unknown metadata value type {value_type}")
