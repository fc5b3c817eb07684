"""Message parts: text, images and files a user message carries besides its words.

``agent.run(["What is on this receipt?", ImagePart.from_path("receipt.jpg")])`` sends both; the
message keeps them in order in ``Message.parts`` and its ``content`` holds the words, so code
that reads only text keeps working. Providers encode the parts in their own wire format; one
that cannot take a kind of part says so before the request (``ConfigError``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Union

import attrs

from .errors import ConfigError
from .text import as_unicode

__all__ = ["FilePart", "ImagePart", "Part", "Prompt", "TextPart", "describe_part", "part_kinds", "split_prompt"]

#: Images a provider is asked to read, by media type.
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def _bytes_repr(data: bytes | None) -> str:
    return "None" if data is None else f"<{len(data)} bytes>"


@attrs.frozen
class TextPart:
    """Words, in their place among the other parts."""

    text: str
    kind: Literal["text"] = "text"


@attrs.frozen
class ImagePart:
    """An image, as bytes (sent inline, base64) or as a URL the server fetches itself."""

    media_type: str
    data: bytes | None = attrs.field(default=None, repr=_bytes_repr)
    url: str | None = None
    kind: Literal["image"] = "image"

    def __attrs_post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            raise ConfigError("an ImagePart has either data (bytes) or a url, not both and not neither")
        if self.data is not None and self.media_type not in IMAGE_TYPES:
            raise ConfigError(f"an image must be one of {', '.join(sorted(IMAGE_TYPES))}, got {self.media_type!r}")

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str = "image/png") -> ImagePart:
        return cls(media_type, data=bytes(data))

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> ImagePart:
        """Read an image file; its media type comes from the file name (``.png``, ``.jpg``...)."""
        location = Path(path)
        media_type = _guess_type(location.name) or ""
        if media_type not in IMAGE_TYPES:
            raise ConfigError(f"{location}: not an image bandoneon can send ({media_type or 'unknown type'}); use .png, .jpg, .gif or .webp")
        return cls(media_type, data=_read(location))

    @classmethod
    def from_url(cls, url: str, media_type: str = "") -> ImagePart:
        """An image the server fetches (``https://...``); nothing is downloaded here."""
        if not url.startswith(("https://", "http://", "data:")):
            raise ConfigError(f"an image URL must start with https://, http:// or data:, got {url[:40]!r}")
        return cls(media_type or _guess_type(url.split("?")[0]) or "", url=url)

    @property
    def digest(self) -> str:
        """``sha256:<hex>`` of the bytes (or of the URL): what logs and traces keep instead."""
        return _digest(self.data if self.data is not None else (self.url or "").encode())

    def data_url(self) -> str:
        """The image as a ``data:`` URL (inline), or its own URL."""
        if self.data is None:
            return self.url or ""
        return _data_url(self.media_type, self.data)


@attrs.frozen
class FilePart:
    """A document (a PDF, a text file) sent inline for the model to read."""

    media_type: str
    data: bytes = attrs.field(repr=_bytes_repr)
    name: str = ""
    kind: Literal["file"] = "file"

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], media_type: str | None = None) -> FilePart:
        location = Path(path)
        guessed = media_type or _guess_type(location.name) or "application/octet-stream"
        return cls(guessed, _read(location), location.name)

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str, name: str = "") -> FilePart:
        return cls(media_type, bytes(data), name)

    @property
    def digest(self) -> str:
        return _digest(self.data)

    def data_url(self) -> str:
        return _data_url(self.media_type, self.data)


Part = Union[TextPart, ImagePart, FilePart]  # noqa: UP007  (a runtime value cattrs structures by trying each)
#: What ``run`` takes: a string, or text and attachments in order.
Prompt = Union[str, Sequence[Union[str, TextPart, ImagePart, FilePart]]]  # noqa: UP007


# hashlib, base64 and mimetypes load on first use: `import bandoneon` does not pay for them.


def _guess_type(name: str) -> str | None:
    import mimetypes

    return mimetypes.guess_type(name)[0]


def _digest(data: bytes) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


def _data_url(media_type: str, data: bytes) -> str:
    import base64

    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def _read(location: Path) -> bytes:
    try:
        return location.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {location}: {exc.strerror or exc}") from None


def split_prompt(prompt: Prompt) -> tuple[str, tuple[Part, ...]]:
    """``(text, parts)``: the words of a prompt, and all its parts in order when it has any
    besides words (``()`` for a plain string)."""
    if isinstance(prompt, str):
        return as_unicode(prompt), ()  # from argv, a file name: it may hold undecodable bytes
    parts: list[Part] = []
    for item in prompt:
        if isinstance(item, str):
            parts.append(TextPart(as_unicode(item)))
        elif isinstance(item, TextPart):
            text = as_unicode(item.text)
            parts.append(item if text is item.text else TextPart(text))
        elif isinstance(item, (ImagePart, FilePart)):
            parts.append(item)
        else:
            raise ConfigError(f"a prompt is a string or a list of strings, ImagePart and FilePart; got {type(item).__name__}")
    text = "\n".join(p.text for p in parts if isinstance(p, TextPart))
    if all(isinstance(p, TextPart) for p in parts):
        return text, ()
    return text, tuple(parts)


def part_kinds(parts: Sequence[Part]) -> frozenset[str]:
    return frozenset(p.kind for p in parts if p.kind != "text")


def describe_part(part: Part) -> str:
    """A part as a log line or a trace shows it: kind, type, size and digest, never the bytes."""
    if isinstance(part, TextPart):
        return f"text ({len(part.text)} characters)"
    if isinstance(part, ImagePart) and part.data is None:
        return f"image {part.url}"
    size = len(part.data or b"")
    name = f" {part.name}" if isinstance(part, FilePart) and part.name else ""
    return f"{part.kind}{name} {part.media_type} {size} bytes {part.digest}"
