"""Reflect: review the work before accepting the answer, and send what is wrong back.

The review goes back to the *same* agent as a new run, so it keeps its history and its
plan and fixes only what is missing. Rounds are capped; the result says what is still open.
Review the world when you can (``review`` callable); a critic model with a checklist when
no code can check the work.

When the rounds run out with findings open, ``on_exhausted`` hands the work to a person
(level 12: "two or three rounds, then hand it to a person"): ``"human"`` asks through the
human plugin's approval channel, a callable decides in your code. The answer accepts the work
as it is (the result says so) or is a correction the agent gets as a new round.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Literal

import attrs

import bandoneon

__all__ = ["Escalation", "ReflectResult", "critic", "reflect", "reflect_sync"]

#: Review-and-fix rounds after the first answer (0: review only).
MAX_ROUNDS = bandoneon.in_range(at_least=0, integer=True)

Review = Callable[[bandoneon.RunResult], Iterable[str] | str | None | Awaitable[Iterable[str] | str | None]]

FIX_PROMPT = "Review found: {findings}. Fix it."
CORRECTION_PROMPT = "The review still found: {findings}. A person looked at it and says: {correction}"

CRITIC_PROMPT = (
    "You review another agent's work against a checklist. Reply PASS if every item is met. "
    "Otherwise reply with one line per problem, each starting with '- ', naming what is wrong "
    "or missing. Nothing else."
)


@attrs.frozen
class Escalation:
    """A person's answer to findings left open when the rounds ran out: ``accepted`` (the work
    as it is), ``corrected`` (``correction`` went back to the agent) or ``unanswered``."""

    findings: tuple[str, ...]
    outcome: Literal["accepted", "corrected", "unanswered"]
    correction: str = ""
    by: str = ""


@attrs.frozen
class ReflectResult:
    """``result`` is the last run's; ``rounds`` how many fix rounds ran (a person's correction
    is one); ``open`` the findings of the last review (empty when it passed); ``reviews`` every
    review's findings; ``escalations`` what a person answered when the rounds ran out."""

    result: bandoneon.RunResult
    rounds: int
    open: tuple[str, ...]
    reviews: tuple[tuple[str, ...], ...]
    escalations: tuple[Escalation, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.open

    @property
    def accepted(self) -> bool:
        """The review passed, or a person accepted the work with its findings open."""
        return self.passed or (bool(self.escalations) and self.escalations[-1].outcome == "accepted")


OnExhausted = Literal["human"] | Callable[[ReflectResult], Any] | None


def _findings(value: Any) -> tuple[str, ...]:
    if value is None or value is True or value is False:
        return ()
    if isinstance(value, str):
        return (value.strip(),) if value.strip() else ()
    return tuple(str(v).strip() for v in value if str(v).strip())


async def reflect(
    agent: bandoneon.Agent,
    prompt: str,
    review: Review,
    *,
    max_rounds: int = 2,
    fix_prompt: str = FIX_PROMPT,
    on_exhausted: OnExhausted = None,
    max_escalations: int = 3,
) -> ReflectResult:
    """Run ``prompt``, then review and fix at most ``max_rounds`` times.

    :param review: ``review(result)`` (sync or async) returns the findings: a list of
        strings, one string, or None / empty when the work is right.
    :param max_rounds: fix rounds at most (0: review once, fix nothing).
    :param fix_prompt: the message a round sends; ``{findings}`` is replaced.
    :param on_exhausted: who decides when the rounds run out with findings open. ``"human"``:
        the human plugin of ``agent``, through its approval channel; a callable
        ``on_exhausted(reflect_result)`` (sync or async) returning True (accept as it is), a
        correction (text) or None/False (leave it open). Default: the plan plugin's
        ``escalate`` option when the plan plugin is active, else nobody (the result says what
        is open).
    :param max_escalations: how many times a person is asked at most (each correction that
        still leaves findings open asks again).
    """
    MAX_ROUNDS.check("max_rounds", max_rounds, owner="reflect")
    if "{findings}" not in fix_prompt:
        raise bandoneon.ConfigError("fix_prompt must contain {findings}, or the agent never hears what is wrong")
    if isinstance(max_escalations, bool) or not isinstance(max_escalations, int) or max_escalations < 1:
        raise bandoneon.ConfigError(f"max_escalations must be an integer of at least 1, got {max_escalations!r}")
    escalate = _escalation(agent, on_exhausted if on_exhausted is not None else _plan_default(agent))

    async def check(result: bandoneon.RunResult) -> tuple[str, ...]:
        value = review(result)
        if inspect.isawaitable(value):
            value = await value
        return _findings(value)

    result = await agent.run(prompt)
    reviews = [await check(result)]
    rounds = 0
    escalations: list[Escalation] = []
    while reviews[-1]:
        if rounds < max_rounds:
            message = fix_prompt.format(findings="; ".join(reviews[-1]))
        elif escalate is not None and len(escalations) < max_escalations:
            so_far = ReflectResult(result, rounds, reviews[-1], tuple(reviews), tuple(escalations))
            escalation = await escalate(so_far, prompt)
            escalations.append(escalation)
            if escalation.outcome != "corrected":
                break
            message = CORRECTION_PROMPT.format(findings="; ".join(reviews[-1]), correction=escalation.correction)
        else:
            break
        rounds += 1
        result = await agent.run(message)
        reviews.append(await check(result))
    return ReflectResult(result, rounds, reviews[-1], tuple(reviews), tuple(escalations))


Escalate = Callable[[ReflectResult, str], Awaitable[Escalation]]


def _plan_default(agent: bandoneon.Agent) -> OnExhausted:
    """The plan plugin's ``escalate`` option, when the plan plugin is active."""
    try:
        return "human" if agent.plugin("plan").escalate else None
    except KeyError:
        return None


def _escalation(agent: bandoneon.Agent, on_exhausted: OnExhausted) -> Escalate | None:
    """What asks when the rounds run out, checked before the first run (a missing person is a
    configuration error, not a surprise after the work is done)."""
    if on_exhausted is None:
        return None
    if on_exhausted == "human":
        # The approval channel, through the review_exhausted hook the human plugin publishes.
        missing = bandoneon.ConfigError("on_exhausted='human' (or Plan(escalate=True)) needs the human plugin (bandoneon-human) active in the agent")
        try:
            from bandoneon_human import hookspecs as human_hooks
        except ImportError:
            raise missing from None
        if not agent.hooks.implements(human_hooks.review_exhausted):
            raise missing
        review_exhausted = human_hooks.review_exhausted

        async def ask_the_person(so_far: ReflectResult, task: str) -> Escalation:
            answer = await agent.hooks.call(review_exhausted, findings=so_far.open, task=task, rounds=so_far.rounds, run_id=so_far.result.run_id)
            if answer is None:
                return Escalation(so_far.open, "unanswered")
            if answer.approved:
                return Escalation(so_far.open, "accepted", by=answer.by)
            if not answer.note.strip():
                return Escalation(so_far.open, "unanswered", by=answer.by)
            return Escalation(so_far.open, "corrected", answer.note.strip(), answer.by)

        return ask_the_person
    if not callable(on_exhausted):
        raise bandoneon.ConfigError(f"on_exhausted must be 'human', a callable or None, got {on_exhausted!r}")
    decide = on_exhausted

    async def ask_your_code(so_far: ReflectResult, task: str) -> Escalation:
        value = decide(so_far)
        if inspect.isawaitable(value):
            value = await value
        if value is True:
            return Escalation(so_far.open, "accepted")
        if isinstance(value, str) and value.strip():
            return Escalation(so_far.open, "corrected", value.strip())
        if value is None or value is False or (isinstance(value, str) and not value.strip()):
            return Escalation(so_far.open, "unanswered")
        raise TypeError(f"on_exhausted returned {value!r}; return True (accept), a correction (text) or None")

    return ask_your_code


def reflect_sync(agent: bandoneon.Agent, prompt: str, review: Review, **options: Any) -> ReflectResult:
    """``reflect`` for scripts."""
    return asyncio.run(reflect(agent, prompt, review, **options))


def critic(model: str | bandoneon.Provider, checklist: Sequence[str], *, task: str | None = None) -> Callable[[bandoneon.RunResult], Awaitable[tuple[str, ...]]]:
    """A review by a second model that reads the task, the answer and ``checklist``.

    ``task`` defaults to the prompt of the reviewed run. A critic that itself ends without
    an answer raises ``NoAnswer``: no verdict is not a pass.
    """
    if not checklist:
        raise bandoneon.ConfigError("a critic needs a checklist of concrete criteria, not 'is this good?'")
    items = "\n".join(f"- {item}" for item in checklist)

    async def review(result: bandoneon.RunResult) -> tuple[str, ...]:
        asked = task if task is not None else next((m.content for m in result.messages if m.role == "user"), "")
        judge = bandoneon.Agent(model, system_prompt=CRITIC_PROMPT, plugins=[], context_files=False, max_turns=1)
        verdict = str((await judge.run(f"Task:\n{asked}\n\nAnswer:\n{result.text or '(no answer)'}\n\nChecklist:\n{items}")).unwrap()).strip()
        if verdict.upper().startswith("PASS"):
            return ()
        problems = [line.strip()[2:].strip() for line in verdict.splitlines() if line.strip().startswith(("- ", "* "))]
        return tuple(problems) or (verdict,)

    return review
