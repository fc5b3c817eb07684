"""Keeping the start and the end of a text that is too long: for previews in notes, and for a
tool result too big for any request.

A cut falls between words: a redaction after the cut must still see a key or a number whole,
and a word cut short after ``</untrusted`` would read as a tag. A text wrapped in tags (the
guard's ``<untrusted>``) keeps both of them in a preview.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ._tokens import TokenCount

__all__ = ["head_and_tail", "preview"]

#: How far the cut of a tool result may move back to a break; a longer run with none (a base64
#: blob) is cut where it is.
_BREAK_REACH = 200
#: The most a note's preview keeps of the end (the last words: a closing tag, a log's last line).
_PREVIEW_TAIL = 60

#: Where a tool result is cut, best first: between lines, between words, else before or after
#: a character no key or token is made of (JSON's quotes and commas, a URL's slashes).
_RESULT_BREAKS = tuple(re.compile(pattern) for pattern in (r"\n", r"\s", r"[^A-Za-z0-9_-]"))
#: Where a preview is cut: between words (it becomes one line).
_SPACE = re.compile(r"\s")
_UP_TO_LAST_SPACE = re.compile(r".*\s", re.DOTALL)  # greedy: back from the end to the last space


def _head(text: str, length: int) -> str:
    """At most ``length`` characters from the start, ending before the last break of the first
    kind of ``_RESULT_BREAKS`` that has one in their last ``_BREAK_REACH`` (else where it is)."""
    if length >= len(text):
        return text
    cut = text[: max(0, length)]
    start = max(0, len(cut) - _BREAK_REACH - 1)
    for pattern in _RESULT_BREAKS:
        found = list(pattern.finditer(cut, start))
        if found:
            return cut[: found[-1].start()]
    return cut


def _tail(text: str, start: int, length: int) -> str:
    """At most ``length`` characters from the end of ``text[start:]`` (not copied: a result may
    be megabytes), starting after the first break of the first kind of ``_RESULT_BREAKS`` that
    has one in their first ``_BREAK_REACH`` (else where it is)."""
    if length >= len(text) - start:
        return text[start:]
    cut = text[len(text) - max(0, length) :]
    for pattern in _RESULT_BREAKS:
        found = pattern.search(cut, 0, _BREAK_REACH + 1)
        if found is not None:
            return cut[found.end() :]
    return cut


def preview(content: str, preview_chars: int) -> str:
    """A one-line preview: the first ``preview_chars`` characters and, when more was left out,
    the last words. Both end on whitespace (however far back: a word cut short after
    ``</untrusted`` would read as a tag), so a text wrapped in tags shows both of its tags and
    no other. The end is as long as the start plus two (``\\n</untrusted`` against
    ``<untrusted``), at most 60 characters. Only the preview's own characters are looked at: a
    history may hold thousands of results to note, some of them megabytes long."""
    if len(content) <= preview_chars:
        return " ".join(content.split())
    head = content[:preview_chars]
    up_to_space = _UP_TO_LAST_SPACE.match(head)
    if up_to_space is not None:
        head = head[: up_to_space.end() - 1]
    tail = ""
    if preview_chars:
        length = min(preview_chars + 2, _PREVIEW_TAIL)
        if len(content) - len(head) <= length:
            tail = content[len(head) :]
        else:
            tail = content[-length:]
            first_space = _SPACE.search(tail)
            tail = tail[first_space.end() :] if first_space is not None else tail
    return " ".join(head.split()) + "..." + (" " + " ".join(tail.split()) if tail.strip() else "")


def head_and_tail(text: str, tokens: int, max_tokens: int, count_tokens: TokenCount, note: Callable[[int], str]) -> str:
    """``text`` (``tokens`` long) cut to its start and its end around ``note(characters left
    out)``, at most ``max_tokens`` as ``count_tokens`` counts.

    The share kept is first guessed from the text's own characters per token, then shrunk a
    quarter at a time until it fits: a few counts of a text of the kept size, never of ``text``.
    """
    keep = len(text) * max_tokens // max(1, tokens)
    while True:
        head = _head(text, keep // 2)
        tail = _tail(text, len(head), keep - len(head))
        shortened = f"{head}\n{note(len(text) - len(head) - len(tail))}\n{tail}"
        if keep == 0 or count_tokens(shortened) <= max_tokens:
            return shortened
        keep = keep * 3 // 4
