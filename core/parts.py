"""Message parts: text, images and files a user message carries besides its words.

``agent.run(["What is on this receipt?", ImagePart.from_path("receipt.jpg")])`` sends both; the
message keeps them in order in ``Message.parts`` and its ``content`` holds the words, so code
that reads only text keeps working. Providers encode the parts in their own wire format; one
that cannot take a kind of part says so before the request (``ConfigError``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Union

import attrs

from .errors import ConfigError
from .ranges import in_range
from .text import as_unicode

__all__ = ["MAX_PART_BYTES", "FilePart", "ImagePart", "Part", "Prompt", "TextPart", "describe_part", "part_kinds", "split_prompt"]

#: Images a provider is asked to read, by media type.
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

#: The most bytes ``from_path`` reads and a ``data:`` URL may hold (``max_bytes=`` changes it):
#: 20 MiB, what OpenAI takes for an image and Gemini for inline data (Anthropic: 5 MB an image,
#: 32 MB a request). A bigger part would be refused by the server after it was read, encoded and
#: sent; a multi-GB file would fill the memory first.
MAX_PART_BYTES = 20 * 1024 * 1024

_BYTE_LIMIT = in_range(at_least=0, integer=True)
_RAISE_IT = "; pass max_bytes= to raise it, if the model's API takes that much"


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
        """An image in memory; bytes that are a PNG, JPEG, GIF or WebP are sent as what they are,
        whatever ``media_type`` says (a server that checks answers 400 to a mislabelled image)."""
        data = bytes(data)
        return cls(_sniffed_type(data) or media_type, data=data)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], *, max_bytes: int = MAX_PART_BYTES) -> ImagePart:
        """Read an image file named ``.png``, ``.jpg``, ``.gif`` or ``.webp``; its bytes say which it is
        (a renamed file keeps the type of its bytes), the name where they do not. A file over
        ``max_bytes`` is a ``ConfigError``, before its bytes are read."""
        location = Path(path)
        media_type = _guess_type(location.name) or ""
        if media_type not in IMAGE_TYPES:
            raise ConfigError(f"{location}: not an image bandoneon can send ({media_type or 'unknown type'}); use .png, .jpg, .gif or .webp")
        return cls.from_bytes(_read(location, max_bytes), media_type)

    @classmethod
    def from_url(cls, url: str, media_type: str = "", *, max_bytes: int = MAX_PART_BYTES) -> ImagePart:
        """An image the server fetches (``https://...``); nothing is downloaded here. A ``data:``
        URL is the image itself: its bytes are decoded (and checked, ``max_bytes`` at most) here,
        and sent inline."""
        if url.startswith("data:"):
            data, declared = _data_url_contents(url, max_bytes)
            return cls.from_bytes(data, declared)
        if not url.startswith(("https://", "http://")):
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
    def from_path(cls, path: str | os.PathLike[str], media_type: str | None = None, *, max_bytes: int = MAX_PART_BYTES) -> FilePart:
        """Read a file (``max_bytes`` at most, else a ``ConfigError`` before its bytes are read);
        its type from ``media_type``, else its name."""
        location = Path(path)
        guessed = media_type or _guess_type(location.name) or "application/octet-stream"
        return cls(guessed, _read(location, max_bytes), location.name)

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


#: The first bytes of each image type a provider reads (WebP: a RIFF file whose form is WEBP).
_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))


def _sniffed_type(data: bytes) -> str | None:
    """The image type the bytes themselves say, if any."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((media_type for signature, media_type in _SIGNATURES if data.startswith(signature)), None)


def _data_url_contents(url: str, max_bytes: int) -> tuple[bytes, str]:
    """The bytes and the declared media type of a ``data:`` URL; an image is only ever base64."""
    import base64

    _BYTE_LIMIT.check("max_bytes", max_bytes)
    header, comma, body = url.removeprefix("data:").partition(",")
    declared, *parameters = header.split(";")
    if not comma or "base64" not in parameters:
        raise ConfigError(f"an image data: URL must be base64 (data:image/png;base64,...), got {url[:40]!r}")
    size = len(body) * 3 // 4 - body.count("=", -2)  # the decoded size of valid base64, known before decoding
    if size > max_bytes:
        raise ConfigError(f"a data: URL image of {size:,} bytes is over the limit of {max_bytes:,} bytes{_RAISE_IT}")
    try:
        return base64.b64decode(body, validate=True), declared.strip().lower()
    except ValueError as exc:  # binascii.Error, or text that is not ASCII
        raise ConfigError(f"an image data: URL is not valid base64 ({exc})") from None


def _read(location: Path, max_bytes: int) -> bytes:
    """A regular file's bytes, ``max_bytes`` at most. Opened without waiting (a named pipe would
    wait for a writer for ever) and refused unless it is a regular file (a device such as
    ``/dev/zero`` never ends). Its size is checked before reading, and the read stops one byte
    past the limit: a file that grows while it is read (or whose size says 0, as in ``/proc``)
    is held to the limit too."""
    _BYTE_LIMIT.check("max_bytes", max_bytes)
    try:
        descriptor = os.open(location, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with open(descriptor, "rb") as file:
            status = os.fstat(descriptor)
            if not stat.S_ISREG(status.st_mode):
                raise ConfigError(f"cannot read {location}: not a regular file")
            if status.st_size > max_bytes:
                raise ConfigError(f"{location} is {status.st_size:,} bytes, over the limit of {max_bytes:,} bytes{_RAISE_IT}")
            data = file.read(int(max_bytes) + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {location}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise ConfigError(f"{location} grew past the limit of {max_bytes:,} bytes while it was read{_RAISE_IT}")
    return data


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
        return f"image {_shown_url(part.url or '')} {part.digest}"
    size = len(part.data or b"")
    name = f" {part.name}" if isinstance(part, FilePart) and part.name else ""
    return f"{part.kind}{name} {part.media_type} {size} bytes {part.digest}"


def _shown_url(url: str) -> str:
    """A URL as a log line shows it: without its query and fragment (a signed URL's signature
    is a credential), and a ``data:`` URL not at all (it is the bytes)."""
    if url.startswith("data:"):
        return "data: URL"
    return url.partition("#")[0].partition("?")[0]
