"""Running an eval: every case, N times, each with a fresh agent, scored, timed and costed.

``run_case`` is the one place a case runs, used by the in-process backend and by the Celery
worker alike, so a distributed eval scores exactly like a local one.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TextIO

import attrs

import bandoneon

from .dataset import Case, load_dataset
from .scorers import Sample, Score, score_sample, tool_calls_of

__all__ = ["CaseRun", "Progress", "evaluate", "run_case", "run_eval"]

#: The range of each numeric option of ``run_eval`` (and of ``bandoneon eval run``).
RANGES = {
    "repeats": bandoneon.in_range(at_least=1, integer=True),
    "concurrency": bandoneon.in_range(at_least=1, integer=True),
    "timeout": bandoneon.in_range(above=0, unit="seconds", optional=True),
}

Status = Literal["passed", "failed", "errored"]


@attrs.frozen
class CaseRun:
    """One run of one case: what it said, what it called, its scores and what it cost."""

    case_id: str
    repeat: int
    status: Status
    output: str = ""
    tool_calls: tuple[str, ...] = ()
    scores: tuple[Score, ...] = ()
    stop: str = ""
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    latency: float = 0.0

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=False)
        data["tool_calls"] = list(self.tool_calls)
        data["scores"] = [s.to_json() for s in self.scores]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CaseRun:
        fields = dict(data)
        fields["tool_calls"] = tuple(fields.get("tool_calls", ()))
        fields["scores"] = tuple(Score(**s) for s in fields.get("scores", ()))
        return cls(**fields)


async def _make(make_agent: Callable[..., Any], case: Case) -> bandoneon.Agent:
    wants_case = bool(inspect.signature(make_agent).parameters)
    agent = make_agent(case) if wants_case else make_agent()
    if inspect.isawaitable(agent):
        agent = await agent
    return agent


async def run_case(case: Case, make_agent: Callable[..., Any], scorers: Sequence[Any], *, repeat: int = 0, timeout: float | None = None) -> CaseRun:
    """Run ``case`` once with a fresh agent and score it. Never raises for the case's sake:
    a run that fails or times out, or a scorer that raises, is an errored ``CaseRun``."""
    started = time.perf_counter()
    agent: bandoneon.Agent | None = None
    try:
        agent = await _make(make_agent, case)
        if timeout is None:
            result = await agent.run(case.prompt())
        else:
            async with asyncio.timeout(timeout):
                result = await agent.run(case.prompt())
    except TimeoutError:
        usage = agent.usage if agent is not None else bandoneon.Usage()
        return CaseRun(case.id, repeat, "errored", stop="timeout", error=f"the case took longer than {timeout:g}s (per-case timeout)", latency=time.perf_counter() - started, **_usage(usage))
    except Exception as exc:
        usage = agent.usage if agent is not None else bandoneon.Usage()
        error = f"{type(exc).__name__}: {exc}"
        return CaseRun(
            case.id, repeat, "errored", stop="error", error=agent.redact(error) if agent is not None else error,
            latency=time.perf_counter() - started, **_usage(usage),
        )
    latency = time.perf_counter() - started
    output = result.text if result.text is not None else ("" if result.answer is None else json.dumps(result.answer, default=str, ensure_ascii=False))
    sample = Sample(case, output, tool_calls_of(result.messages), result, result.usage, latency)
    scores = tuple([await score_sample(scorer, sample) for scorer in scorers])
    errors = [f"{s.scorer}: {s.error}" for s in scores if s.error]
    if errors:
        status: Status = "errored"
    else:
        status = "passed" if all(s.passed for s in scores) else "failed"
    # Scorers judged the real output; the report keeps it as the agent's rules (guard, policy
    # packs) mask it, like every other store.
    return CaseRun(
        case.id,
        repeat,
        status,
        output=agent.redact(output),
        tool_calls=sample.tool_calls,
        scores=tuple(attrs.evolve(s, detail=agent.redact(s.detail), error=agent.redact(s.error)) for s in scores),
        stop=result.stop,
        error=agent.redact("; ".join(errors)) or None,
        latency=latency,
        **_usage(result.usage),
    )


def _usage(usage: bandoneon.Usage) -> dict[str, Any]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "cost": usage.cost}


class Progress:
    """A one-line progress bar on stderr: ``eval [#####.....] 5/10  4 passed  1 failed  0 errored``.

    Drawn only on a terminal unless ``force``; plain text, so it works in CI logs too.
    """

    def __init__(self, total: int, stream: TextIO | None = None, *, force: bool = False, width: int = 30):
        self.total = total
        self.stream = stream or sys.stderr
        self.enabled = force or getattr(self.stream, "isatty", lambda: False)()
        self.width = width
        self.counts = {"passed": 0, "failed": 0, "errored": 0}

    def update(self, run: CaseRun) -> None:
        self.counts[run.status] += 1
        if not self.enabled:
            return
        done = sum(self.counts.values())
        filled = int(self.width * done / max(self.total, 1))
        line = f"\reval [{'#' * filled}{'.' * (self.width - filled)}] {done}/{self.total}  " + "  ".join(f"{n} {k}" for k, n in self.counts.items())
        self.stream.write(line)
        if done == self.total:
            self.stream.write("\n")
        self.stream.flush()


async def run_eval(
    dataset: str | Iterable[Case | Mapping[str, Any]],
    make_agent: Callable[..., Any],
    scorers: Sequence[Any],
    *,
    repeats: int = 1,
    timeout: float | None = None,
    concurrency: int = 4,
    progress: Progress | bool | None = None,
    backend: Any = None,
    name: str = "eval",
) -> Any:
    """Run every case ``repeats`` times and return a ``Report``.

    ``make_agent()`` (or ``make_agent(case)``) builds a fresh agent per run; ``concurrency``
    bounds how many run at once; ``timeout`` is per case run. ``backend`` (default:
    in-process) may spread the runs over machines (``CeleryBackend``).
    """
    from .report import Report

    for option, value in (("repeats", repeats), ("concurrency", concurrency), ("timeout", timeout)):
        RANGES[option].check(option, value, owner="eval")
    if not scorers:
        raise bandoneon.ConfigError("an eval needs at least one scorer")
    cases = load_dataset(dataset)
    jobs = [(case, repeat) for case in cases for repeat in range(repeats)]
    bar = progress if isinstance(progress, Progress) else Progress(len(jobs), force=bool(progress)) if progress is not False else None
    started = time.perf_counter()
    if backend is None:
        runs = await _in_process(jobs, make_agent, scorers, timeout, concurrency, bar)
    else:
        runs = await backend.run(jobs, timeout=timeout, progress=bar)
    order = {(case.id, repeat): n for n, (case, repeat) in enumerate(jobs)}
    runs = sorted(runs, key=lambda r: order[(r.case_id, r.repeat)])
    return Report.build(name, cases, runs, repeats=repeats, wall_time=time.perf_counter() - started)


async def _in_process(jobs: list[tuple[Case, int]], make_agent: Callable[..., Any], scorers: Sequence[Any], timeout: float | None, concurrency: int, bar: Progress | None) -> list[CaseRun]:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(case: Case, repeat: int) -> CaseRun:
        async with semaphore:
            run = await run_case(case, make_agent, scorers, repeat=repeat, timeout=timeout)
        if bar is not None:
            bar.update(run)
        return run

    return list(await asyncio.gather(*(one(case, repeat) for case, repeat in jobs)))


def evaluate(*args: Any, **kwargs: Any) -> Any:
    """``run_eval`` for scripts (runs its own event loop)."""
    return asyncio.run(run_eval(*args, **kwargs))
