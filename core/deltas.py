"""Streamed pieces of a reply as events: ``text_delta``, ``thinking_delta``, ``tool_call_delta``,
and the growing typed answer as ``output_delta``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .events import OutputDelta, TextDelta, ThinkingDelta, ToolCallDelta
from .output import OUTPUT_TOOL, WRAPPER_KEY, OutputInvalid, OutputSpec
from .partial_json import NOTHING, parse_partial

if TYPE_CHECKING:
    from .context import RunContext

__all__ = ["DeltaForwarder"]

#: An answer shorter than this is parsed again after every piece; a longer one once it has
#: grown by a sixteenth, and when the reply is complete (``finish``). Parsed after every piece,
#: a long answer cost time in the square of its length (25 KB in 4-character pieces: 21 s of
#: CPU on the event loop).
_PARSE_EVERY_PIECE_UNDER = 1024


class DeltaForwarder:
    """Turns a provider's streamed pieces into ``text_delta`` / ``tool_call_delta`` events,
    and a typed answer's pieces into ``output_delta`` events."""

    __slots__ = ("answer", "answer_index", "answer_size", "delivered", "next_parse", "parsed_size", "parts", "run")

    def __init__(self, run: RunContext):
        self.run = run
        self.delivered = False
        self.parts: list[str] = []
        self.answer: list[str] | None = [] if run.output is not None else None
        self.answer_index: int | None = None
        self.answer_size = 0
        self.parsed_size = 0
        self.next_parse = 0

    @property
    def text(self) -> str:
        return "".join(self.parts)

    @property
    def unparsed(self) -> bool:
        """Pieces of the typed answer came since it was last parsed (``finish`` parses them)."""
        return self.answer is not None and self.answer_size > self.parsed_size

    async def finish(self) -> None:
        """The reply is complete: the last ``output_delta`` carries the whole answer."""
        await self._parse()

    async def __call__(self, kind: str, payload: Any) -> None:
        self.delivered = True
        run = self.run
        if kind == "text":
            self.parts.append(payload)
            await run.emit(TextDelta(run.run_id, payload))
            if self.answer is not None and run.output is not None and run.output.mode == "native":
                await self._answer_piece(payload)
        elif kind == "thinking":
            await run.emit(ThinkingDelta(run.run_id, payload))
        else:
            index, name, piece = payload
            await run.emit(ToolCallDelta(run.run_id, index, name, piece))
            if self.answer is not None and name == OUTPUT_TOOL and self.answer_index is None:
                self.answer_index = index
            if index == self.answer_index and piece:
                await self._answer_piece(piece)

    async def _answer_piece(self, piece: str) -> None:
        assert self.answer is not None
        self.answer.append(piece)
        self.answer_size += len(piece)
        if self.answer_size >= self.next_parse:
            await self._parse()

    async def _parse(self) -> None:
        assert self.answer is not None and self.run.output is not None
        size = self.parsed_size = self.answer_size
        if size >= _PARSE_EVERY_PIECE_UNDER:
            self.next_parse = size + size // 16
        try:
            partial = parse_partial("".join(self.answer))
        except ValueError:
            self.answer = None  # not JSON after all: the repair round will say so
            return
        if partial is not NOTHING:
            await self.run.emit(OutputDelta(self.run.run_id, partial, _checked_so_far(self.run.output, partial)))


def _checked_so_far(spec: OutputSpec, partial: Any) -> Any:
    """The partial answer as the output type, where it fits already; for a list, the items
    that are complete (the last one may still be growing)."""
    try:
        return spec.check(partial)
    except OutputInvalid:
        pass
    inner = partial.get(WRAPPER_KEY) if spec.is_wrapped and isinstance(partial, dict) else partial
    if isinstance(inner, list) and inner:
        try:
            return spec.check(inner[:-1])
        except OutputInvalid:
            return None
    return None
