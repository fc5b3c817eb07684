"""The run's answer: whether it fits the output type, and what ``check_answer`` hooks make of
it (accepted, rewritten, or sent back), for an answering turn and for a wrap-up."""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine, Sequence
from types import CoroutineType
from typing import TYPE_CHECKING, Any

import attrs

from .decisions import FinalAnswer, SendBack, Stop
from .events import AnswerSentBack
from .messages import Message, ToolCall, ToolResult
from .output import OUTPUT_TOOL, OutputInvalid, OutputSpec

if TYPE_CHECKING:
    from .context import RunContext

__all__ = [
    "NO_ANSWER",
    "Rounds",
    "check_answer",
    "check_wrap_up",
    "count_invalid",
    "final_text",
    "take_answer",
    "wrapped_up_output",
]

#: No answer given yet in this reply (None could be an answer).
NO_ANSWER: Any = object()


@attrs.define
class Rounds:
    """How often this run's answer was not taken: it did not fit the output type, or a
    ``check_answer`` hook sent it back."""

    invalid: int = 0
    sent_back: int = 0


def count_invalid(run: RunContext, rounds: Rounds, problem: str) -> Stop | None:
    """Count an answer that did not fit; the run ends once ``output_retries`` are spent."""
    assert run.output is not None  # only a typed run has problems with its answer
    rounds.invalid += 1
    if rounds.invalid > run.output.retries:
        return Stop("invalid_output", f"no valid answer after {rounds.invalid} tries; the last problem: {problem}")
    return None


def check_answer(run: RunContext, stop: Stop, rounds: Rounds) -> Stop | None | Coroutine[Any, Any, Stop | None]:
    """Pass the answer through ``check_answer``: keep a rewrite, or send it back (None: go on).
    Answered on the spot when no check has to wait (as ``Hooks.now``); otherwise a coroutine."""
    text = final_text(run, stop)
    answer = FinalAnswer(text, run.loop_state.output if run.output is not None else text, stop.reason, stop.answer)
    verdict = run.agent.hooks.callers["check_answer"](run, answer)
    if type(verdict) is CoroutineType:
        return _judged_later(run, stop, rounds, answer, verdict)
    return _judged(run, stop, rounds, answer, verdict)


async def _judged_later(run: RunContext, stop: Stop, rounds: Rounds, answer: FinalAnswer, verdict: Awaitable[FinalAnswer | SendBack]) -> Stop | None:
    judged: Any = _judged(run, stop, rounds, answer, await verdict)
    return await judged if type(judged) is CoroutineType else judged  # type: ignore[no-any-return]


def _judged(run: RunContext, stop: Stop, rounds: Rounds, answer: FinalAnswer, verdict: FinalAnswer | SendBack) -> Stop | None | Coroutine[Any, Any, None]:
    if isinstance(verdict, SendBack):
        rounds.sent_back += 1
        if rounds.sent_back > run.agent.max_send_backs:
            return Stop("answer_refused", f"the answer was sent back {rounds.sent_back} times; the last reason: {verdict.reason}")
        run.append(Message.user(verdict.reason))
        if run.wants_events and (delivering := run._emit(run, AnswerSentBack(run.run_id, run.turn, verdict.reason))) is not None:
            return _none_after(delivering)
        return None
    if verdict is not answer and verdict != answer:  # unchanged is the common case: no field-by-field compare
        try:
            run.loop_state.rewritten_answer = rewritten(run, answer, verdict)
        except OutputInvalid as exc:
            return Stop("invalid_output", f"the answer as check_answer rewrote it does not fit the output type: {exc}")
    return stop


async def _none_after(delivering: Awaitable[None]) -> None:
    await delivering


def rewritten(run: RunContext, before: FinalAnswer, after: FinalAnswer) -> FinalAnswer:
    """A rewritten answer, its text also in the history; a typed run's new text is checked."""
    if after.text != before.text:
        if run.output is not None and after.output is before.output and after.text is not None:
            after = attrs.evolve(after, output=run.output.parse_text(after.text))
        elif run.output is None:
            after = attrs.evolve(after, output=after.text)
        rewrite_history(run, before.text, after.text or "")
    return after


def rewrite_history(run: RunContext, old: str | None, new: str) -> None:
    """The last assistant message says ``new`` instead of ``old`` (in the working history and
    the transcript), so what the model and a saved session see matches what the caller got.

    In ``tool`` output mode the answer is the input of the ``final_answer`` call, so that is
    where the rewrite goes."""
    for history in (run.messages, run.transcript):
        for index in range(len(history) - 1, -1, -1):
            message = history[index]
            if message.role != "assistant":
                continue
            if message.content and message.content == old:
                history[index] = attrs.evolve(message, content=new)
            elif old is not None and any(c.name == OUTPUT_TOOL and c.arguments == old for c in message.tool_calls):
                calls = tuple(ToolCall(c.id, c.name, new) if c.name == OUTPUT_TOOL and c.arguments == old else c for c in message.tool_calls)
                history[index] = attrs.evolve(message, tool_calls=calls)
            break


async def check_wrap_up(run: RunContext, stop: Stop, text: str | None, output: Any) -> tuple[str | None, Any, str]:
    """A wrap-up's text passes ``check_answer`` too; sending it back withholds it (the run is over)."""
    answer = FinalAnswer(text, output, stop.reason, can_send_back=False)
    verdict = await run.agent.hooks.check_answer(run, answer)
    if isinstance(verdict, SendBack):
        rewrite_history(run, text, "(withheld)")
        return None, None, f"{stop.detail} (the wrap-up was withheld: {verdict.reason})".strip()
    if verdict == answer:
        return text, output, stop.detail
    try:
        verdict = rewritten(run, answer, verdict)
    except OutputInvalid:
        verdict = attrs.evolve(verdict, output=None)
    return verdict.text, verdict.output, stop.detail


def final_text(run: RunContext, stop: Stop) -> str | None:
    """The last assistant text; in ``tool`` output mode, the JSON the answer tool was given."""
    if not stop.is_answer:
        return None
    for index in range(len(run.messages) - 1, -1, -1):
        message = run.messages[index]
        if message.role == "assistant":
            if run.output is not None and run.output.mode == "tool" and (taken := _taken_call(message, run.messages[index + 1 :])) is not None:
                return taken.arguments
            return message.content or None
    return None


def _taken_call(message: Message, after: Sequence[Message]) -> ToolCall | None:
    """The ``final_answer`` call whose input is the answer: the first one not sent back (a
    call before it that did not fit has an error for its result)."""
    refused = {m.tool_call_id for m in after if m.role == "tool" and m.is_error}
    return next((c for c in message.tool_calls if c.name == OUTPUT_TOOL and c.id not in refused), None)


def wrapped_up_output(spec: OutputSpec | None, text: str | None) -> Any:
    """A wrap-up's answer counts as output when it fits (no repair round: the run is over)."""
    if spec is None or text is None:
        return text
    try:
        return spec.parse_text(text)
    except OutputInvalid:
        return None


def take_answer(spec: OutputSpec, call: ToolCall, answered: Any, problem: str) -> tuple[ToolResult, Any, str]:
    """Check one ``final_answer`` call: the first valid one is the answer; a second one in the
    same reply is told the answer was already taken."""
    if answered is not NO_ANSWER:
        return ToolResult(call, "An answer was already given in this reply; this one was not used."), answered, problem
    try:
        value = spec.parse_arguments(call.arguments)
    except OutputInvalid as exc:
        return ToolResult(call, spec.repair_prompt(str(exc)), is_error=True), NO_ANSWER, str(exc)
    return ToolResult(call, "Answer received.", arguments={"answer": value}), value, ""
