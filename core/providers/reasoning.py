"""Reasoning from OpenAI-compatible servers, kept as the message's ``thinking``.

Servers put a reasoning model's thoughts in one of three places: a ``reasoning_content`` field
(vLLM, llama.cpp, DeepSeek), a ``reasoning`` field (Ollama, OpenRouter), or a ``<think>...</think>``
block at the start of the content (a server that passes the model's raw text through). All three
become ``Thinking`` blocks; the answer's text is what is left.
"""

from __future__ import annotations

from typing import Any

from ..messages import Thinking

__all__ = ["REASONING_FIELDS", "ThinkSplitter", "reasoning_of", "split_think"]

#: Where servers put the reasoning, in the order they are looked at.
REASONING_FIELDS = ("reasoning_content", "reasoning")
OPEN, CLOSE = "<think>", "</think>"


def reasoning_of(raw: dict[str, Any]) -> str:
    """The reasoning text of a message or a stream delta ("" when there is none)."""
    for field in REASONING_FIELDS:
        value = raw.get(field)
        if isinstance(value, str) and value:
            return value
    return ""


def split_think(content: str) -> tuple[str, str]:
    """``(thinking, text)`` of content that opens with a ``<think>`` block; ``("", content)``
    otherwise. An unclosed block is all thinking (the reply was cut off mid-thought)."""
    stripped = content.lstrip()
    if not stripped.startswith(OPEN):
        return "", content
    inner = stripped[len(OPEN):]
    thought, closed, rest = inner.partition(CLOSE)
    return thought.strip(), rest.lstrip() if closed else ""


def thinking_blocks(*texts: str) -> tuple[Thinking, ...]:
    return tuple(Thinking(text) for text in texts if text)


class ThinkSplitter:
    """``split_think`` for a stream: each piece of content comes back as ``(kind, text)``
    pieces, ``kind`` being ``"thinking"`` or ``"text"``, as soon as it is known which it is."""

    def __init__(self) -> None:
        self.state = "start"  # start -> (thinking -> text) | text
        self.held = ""
        self.after_close = False  # the answer's leading blank lines are dropped, as split_think does

    def feed(self, piece: str) -> list[tuple[str, str]]:
        if self.state == "text":
            if self.after_close:
                piece = piece.lstrip()
                self.after_close = not piece
            return [("text", piece)] if piece else []
        self.held += piece
        out: list[tuple[str, str]] = []
        if self.state == "start":
            stripped = self.held.lstrip()
            if OPEN.startswith(stripped) and len(stripped) < len(OPEN):
                return []  # could still become "<think>"
            if not stripped.startswith(OPEN):
                self.state, held, self.held = "text", self.held, ""
                return [("text", held)]
            self.state, self.held = "thinking", stripped[len(OPEN):]
        if self.state == "thinking":
            thought, closed, rest = self.held.partition(CLOSE)
            if closed:
                self.state, self.held = "text", ""
                if thought:
                    out.append(("thinking", thought))
                self.after_close = True
                out.extend(self.feed(rest))
                return out
            # Keep back what could be the start of "</think>"; the rest is surely thinking.
            keep = next((n for n in range(min(len(CLOSE) - 1, len(self.held)), 0, -1) if CLOSE.startswith(self.held[-n:])), 0)
            sure, self.held = self.held[: len(self.held) - keep], self.held[len(self.held) - keep:]
            if sure:
                out.append(("thinking", sure))
        return out

    def finish(self) -> list[tuple[str, str]]:
        """What is still held when the stream ends."""
        held, self.held = self.held, ""
        if not held:
            return []
        return [("thinking" if self.state == "thinking" else "text", held)]
