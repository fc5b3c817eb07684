"""Reflect: review the work before accepting the answer, and send what is wrong back.

The review goes back to the *same* agent as a new run, so it keeps its history and its
plan and fixes only what is missing. Rounds are capped; the result says what is still open.
Review the world when you can (``review`` callable); a critic model with a checklist when
no code can check the work.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import attrs

import bandoneon

__all__ = ["ReflectResult", "critic", "reflect", "reflect_sync"]

Review = Callable[[bandoneon.RunResult], Iterable[str] | str | None | Awaitable[Iterable[str] | str | None]]

FIX_PROMPT = "Review found: {findings}. Fix it."

CRITIC_PROMPT = (
    "You review another agent's work against a checklist. Reply PASS if every item is met. "
    "Otherwise reply with one line per problem, each starting with '- ', naming what is wrong "
    "or missing. Nothing else."
)


@attrs.frozen
class ReflectResult:
    """``result`` is the last run's; ``rounds`` how many fix rounds ran; ``open`` the
    findings of the last review (empty when it passed); ``reviews`` every review's findings."""

    result: bandoneon.RunResult
    rounds: int
    open: tuple[str, ...]
    reviews: tuple[tuple[str, ...], ...]

    @property
    def passed(self) -> bool:
        return not self.open


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
) -> ReflectResult:
    """Run ``prompt``, then review and fix at most ``max_rounds`` times.

    :param review: ``review(result)`` (sync or async) returns the findings: a list of
        strings, one string, or None / empty when the work is right.
    :param max_rounds: fix rounds at most (0: review once, fix nothing).
    :param fix_prompt: the message a round sends; ``{findings}`` is replaced.
    """
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 0:
        raise bandoneon.ConfigError(f"max_rounds must be an integer of at least 0, got {max_rounds!r}")
    if "{findings}" not in fix_prompt:
        raise bandoneon.ConfigError("fix_prompt must contain {findings}, or the agent never hears what is wrong")

    async def check(result: bandoneon.RunResult) -> tuple[str, ...]:
        value = review(result)
        if inspect.isawaitable(value):
            value = await value
        return _findings(value)

    result = await agent.run(prompt)
    reviews = [await check(result)]
    rounds = 0
    while reviews[-1] and rounds < max_rounds:
        rounds += 1
        result = await agent.run(fix_prompt.format(findings="; ".join(reviews[-1])))
        reviews.append(await check(result))
    return ReflectResult(result, rounds, reviews[-1], tuple(reviews))


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
