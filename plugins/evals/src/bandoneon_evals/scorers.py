"""Scorers: grade one run of one case. Four kinds, as level 11 says — the answer (exact,
contains, regex), the trajectory (the tools called), your own function, a model as judge.

A scorer is anything with a ``name`` and ``score(sample)`` (sync or async) returning a
``Score``, a bool or a number in [0, 1]. A scorer that raises, or a judge whose answer is not
valid, gives an *errored* score: the case run counts as errored, never as a pass, and the
other cases go on.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

import attrs

import bandoneon

from .dataset import Case

__all__ = [
    "JudgeError",
    "Sample",
    "Score",
    "Scorer",
    "contains",
    "custom",
    "exact",
    "judge",
    "regex",
    "score_sample",
    "stop_reason",
    "tool_errors",
    "tool_calls_of",
    "trajectory",
]


@attrs.frozen
class Sample:
    """One run of one case, as scorers see it."""

    case: Case
    output: str
    tool_calls: tuple[str, ...]
    result: bandoneon.RunResult | None = None
    usage: bandoneon.Usage = bandoneon.Usage()
    latency: float = 0.0


@attrs.frozen
class Score:
    scorer: str
    value: float
    passed: bool
    detail: str = ""
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


class JudgeError(ValueError):
    """The judge's answer cannot be used (not JSON, no score, out of range)."""


def tool_calls_of(messages: Sequence[bandoneon.Message]) -> tuple[str, ...]:
    """The names of the tools the model asked for, in order (the run's trajectory)."""
    return tuple(call.name for message in messages if message.role == "assistant" for call in message.tool_calls)


@attrs.define
class Scorer:
    """A named scoring function ``fn(sample) -> Score | bool | float`` (sync or async)."""

    name: str
    fn: Callable[[Sample], Any]
    threshold: float = 1.0

    def score(self, sample: Sample) -> Any:
        return self.fn(sample)


async def score_sample(scorer: Any, sample: Sample) -> Score:
    """Run one scorer; never raises: a failure is an errored ``Score``."""
    name = getattr(scorer, "name", None) or getattr(scorer, "__name__", None) or type(scorer).__name__
    try:
        method = getattr(scorer, "score", None)
        outcome = method(sample) if method is not None else scorer(sample)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return _as_score(name, outcome, getattr(scorer, "threshold", 1.0))
    except Exception as exc:
        return Score(name, 0.0, False, error=f"{type(exc).__name__}: {exc}")


def _as_score(name: str, outcome: Any, threshold: float) -> Score:
    if isinstance(outcome, Score):
        return outcome
    if isinstance(outcome, bool):
        return Score(name, 1.0 if outcome else 0.0, outcome)
    if isinstance(outcome, (int, float)):
        value = float(outcome)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"scorer {name!r} returned {value}, outside [0, 1]")
        return Score(name, value, value >= threshold)
    raise TypeError(f"scorer {name!r} returned {outcome!r}; return a Score, a bool or a number in [0, 1]")


def _expected(sample: Sample, given: Any, key: str, scorer: str) -> Any:
    value = given if given is not None else sample.case.expected_value(key)
    if value is None:
        raise ValueError(f"{scorer}: case {sample.case.id!r} has no expected {key!r} and none was given to the scorer")
    return value


# ---------------------------------------------------------------- the answer


def exact(expected: str | None = None, *, strip: bool = True, ignore_case: bool = False, name: str = "exact") -> Scorer:
    """The final text equals ``expected`` (default: the case's expected ``output``)."""

    def score(sample: Sample) -> Score:
        want = str(_expected(sample, expected, "output", name))
        got = sample.output
        a, b = (got.strip(), want.strip()) if strip else (got, want)
        if ignore_case:
            a, b = a.lower(), b.lower()
        ok = a == b
        return Score(name, 1.0 if ok else 0.0, ok, "" if ok else f"expected {want!r}, got {got[:200]!r}")

    return Scorer(name, score)


def contains(expected: str | Sequence[str] | None = None, *, ignore_case: bool = False, name: str = "contains") -> Scorer:
    """The final text contains the text (or every text of a list); default: expected ``contains``, else ``output``."""

    def score(sample: Sample) -> Score:
        want = expected if expected is not None else (sample.case.expected_value("contains") or sample.case.expected_value("output"))
        if want is None:
            raise ValueError(f"{name}: case {sample.case.id!r} has no expected 'contains' or 'output' and none was given")
        needles = [want] if isinstance(want, str) else list(want)
        haystack = sample.output.lower() if ignore_case else sample.output
        missing = [n for n in needles if (n.lower() if ignore_case else n) not in haystack]
        value = (len(needles) - len(missing)) / len(needles)
        return Score(name, value, not missing, f"missing {missing!r}" if missing else "")

    return Scorer(name, score)


def regex(pattern: str | None = None, *, flags: int = 0, name: str = "regex") -> Scorer:
    """The final text matches the pattern (``re.search``); default: the case's expected ``regex``."""
    compiled = re.compile(pattern, flags) if pattern is not None else None

    def score(sample: Sample) -> Score:
        rule = compiled or re.compile(str(_expected(sample, None, "regex", name)), flags)
        ok = rule.search(sample.output) is not None
        return Score(name, 1.0 if ok else 0.0, ok, "" if ok else f"/{rule.pattern}/ not found in {sample.output[:200]!r}")

    return Scorer(name, score)


# ---------------------------------------------------------------- the trajectory

TrajectoryMode = Literal["exact", "ordered", "set"]


def trajectory(expected: Sequence[str] | None = None, *, mode: TrajectoryMode = "ordered", allow_extras: bool = True, name: str = "trajectory") -> Scorer:
    """The tools called, against the expected list (default: the case's expected ``tools``).

    - ``exact``: the same calls in the same order, nothing else.
    - ``ordered``: the expected calls appear in this order (an ordered subset of the run's).
    - ``set``: every expected tool was called, in any order.

    ``allow_extras=False`` (ordered, set) also fails a run that called a tool not in the list.
    """
    if mode not in ("exact", "ordered", "set"):
        raise bandoneon.ConfigError(f"trajectory mode must be 'exact', 'ordered' or 'set', got {mode!r}")

    def score(sample: Sample) -> Score:
        want = list(_expected(sample, expected, "tools", name))
        got = list(sample.tool_calls)
        extras = sorted({t for t in got if t not in want})
        if mode == "exact":
            ok = got == want
        elif mode == "ordered":
            ok = _is_subsequence(want, got)
        else:
            ok = set(want) <= set(got)
        if ok and not allow_extras and extras:
            ok = False
        detail = "" if ok else f"expected {mode} {want}, called {got}" + (f" (extra: {extras})" if extras and not allow_extras else "")
        return Score(name, 1.0 if ok else 0.0, ok, detail)

    return Scorer(name, score)


def _is_subsequence(want: Sequence[str], got: Sequence[str]) -> bool:
    position = 0
    for item in got:
        if position < len(want) and item == want[position]:
            position += 1
    return position == len(want)


# ---------------------------------------------------------------- how the run went


def tool_errors(most: int | None = None, *, name: str = "tool_errors") -> Scorer:
    """At most ``most`` tool results came back as errors (default: the case's expected
    ``tool_errors``). The check for a regression case replayed from a run whose tool failed."""

    def score(sample: Sample) -> Score:
        limit = int(_expected(sample, most, "tool_errors", name))
        if sample.result is None:
            raise ValueError(f"{name}: the run has no messages to count tool errors in")
        failed = [m.name or "?" for m in sample.result.messages if m.role == "tool" and m.is_error]
        ok = len(failed) <= limit
        return Score(name, 1.0 if ok else 0.0, ok, "" if ok else f"{len(failed)} tool error(s) ({', '.join(failed)}), at most {limit} expected")

    return Scorer(name, score)


def stop_reason(expected: str | None = None, *, name: str = "stop") -> Scorer:
    """The run ended for the expected reason (default: the case's expected ``stop``), e.g. ``end_turn``."""

    def score(sample: Sample) -> Score:
        want = str(_expected(sample, expected, "stop", name))
        got = sample.result.stop if sample.result is not None else None
        ok = got == want
        return Score(name, 1.0 if ok else 0.0, ok, "" if ok else f"expected the run to end with {want}, it ended with {got}")

    return Scorer(name, score)


# ---------------------------------------------------------------- your own check


def custom(fn: Callable[[Sample], Any] | Callable[[Sample], Awaitable[Any]], *, name: str | None = None, threshold: float = 1.0) -> Scorer:
    """Any function from a run to a ``Score``, a bool or a number in [0, 1]."""
    return Scorer(name or str(getattr(fn, "__name__", "custom")), fn, threshold)


# ---------------------------------------------------------------- a model as judge

JUDGE_SYSTEM = (
    "You grade an AI agent's answer against a rubric. Reply with one JSON object and nothing else: "
    '{{"score": <a number from {low} to {high}>, "reason": "<one sentence>"}}.'
)


@attrs.define
class Judge:
    """A model grades the answer with a rubric on a ``low``–``high`` scale, normalised to [0, 1]
    as ``(score - low) / (high - low)``: a 1 on 0–10 is 0.1, not 1.0. An answer that is not
    JSON, has no number, or is out of range is an error, never a pass."""

    model: Any
    rubric: str
    low: float = 0.0
    high: float = 10.0
    threshold: float = 0.7
    name: str = "judge"

    def __attrs_post_init__(self) -> None:
        if self.high <= self.low:
            raise bandoneon.ConfigError(f"judge scale must have high > low, got {self.low}–{self.high}")
        if isinstance(self.model, str):
            self.model = bandoneon.resolve_model(self.model)

    async def score(self, sample: Sample) -> Score:
        prompt = (
            f"Rubric:\n{self.rubric}\n\nQuestion:\n{sample.case.input}\n\n"
            + (f"Reference answer:\n{sample.case.expected_value('output')}\n\n" if sample.case.expected_value("output") else "")
            + f"Answer to grade:\n{sample.output}"
        )
        request = bandoneon.ModelRequest(
            messages=(bandoneon.Message.user(prompt),),
            system_prompt=JUDGE_SYSTEM.format(low=_fmt(self.low), high=_fmt(self.high)),
            settings={"temperature": 0},
        )
        reply = await self.model.complete(request)
        raw, reason = self.parse(reply.message.content)
        value = (raw - self.low) / (self.high - self.low)
        return Score(self.name, value, value >= self.threshold, f"{_fmt(raw)}/{_fmt(self.high)}: {reason}")

    def parse(self, text: str) -> tuple[float, str]:
        body = text.strip()
        fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.DOTALL)
        if fenced:
            body = fenced.group(1)
        try:
            data = bandoneon.loads_bounded(body)  # the judge model's answer: it may nest without end
        except ValueError:
            raise JudgeError(f"the judge did not answer JSON: {text[:200]!r}") from None
        if not isinstance(data, dict) or "score" not in data:
            raise JudgeError(f"the judge's JSON has no 'score': {text[:200]!r}")
        raw = data["score"]
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise JudgeError(f"the judge's score is not a number: {raw!r}")
        if not self.low <= raw <= self.high:
            raise JudgeError(f"the judge's score {raw} is outside the scale {_fmt(self.low)}–{_fmt(self.high)}")
        return float(raw), str(data.get("reason", ""))


def judge(model: Any, rubric: str, *, scale: tuple[float, float] = (0, 10), threshold: float = 0.7, name: str = "judge") -> Judge:
    """A model as judge: ``judge(provider_or_model_string, "Full marks if ...", scale=(0, 10))``."""
    return Judge(model, rubric, scale[0], scale[1], threshold, name)


def _fmt(number: float) -> str:
    return f"{number:g}"
