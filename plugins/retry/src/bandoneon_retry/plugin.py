"""The retry plugin: the server layer of level 5's three kinds of failure.

The core asks ``retry_delay`` after every failed model call; this plugin answers with a wait
or gives up. The core does the rest: it emits ``provider_retry``, sleeps cancellably, and
never lets a stream that already showed text be replayed (that is ``StreamInterrupted``,
which is not retryable).
"""

from __future__ import annotations

import logging
import random as random_module
import time
from collections.abc import Callable
from typing import ClassVar

import attrs

import bandoneon

from ._delays import full_jitter, server_delay
from ._events import RetryAfterCapped

__all__ = ["Backoff"]

log = logging.getLogger("bandoneon_retry")

_STATE = bandoneon.StashKey[float]("retry.first_failure")
_NO_FALLBACKS = frozenset({"agent_created"})


def _jitter_source(backoff: Backoff) -> Callable[[], float]:
    """Seeding a generator reads the OS's entropy: only a seeded instance gets its own."""
    return random_module.Random(backoff.seed).random if backoff.seed is not None else random_module.random


@attrs.define
class Backoff(bandoneon.Plugin):
    """Retry 429, 5xx and network failures with capped exponential backoff and full jitter.

    Active by default once installed. ``max_attempts`` counts every call, the first one
    included. ``deadline`` bounds the time one failing model call may keep retrying, counted
    from its first failure: no attempt is started after it. ``Retry-After`` is honoured up to
    ``max_delay``; a longer request is capped and reported (``retry_after_capped`` event and a
    warning in the log).

    ``fallback`` lists models (``"ollama:small"``) to try, in order, once a model's retries
    are spent on such failures (never after a 4xx): they are added to the agent's own
    fallbacks when it is built (``Agent(model=[...])`` does the same without this plugin).

    For tests and reproducible runs, ``seed`` fixes the jitter; ``random`` (a function
    returning a float in [0, 1)) and ``clock`` (seconds, monotonic) can be replaced on an
    instance after it is built.
    """

    name: ClassVar[str] = "retry"
    is_default: ClassVar[bool] = True

    #: Counts the first call too.
    max_attempts: int = attrs.field(default=5, validator=bandoneon.in_range(at_least=1, integer=True))
    base_delay: float = attrs.field(default=0.5, validator=bandoneon.in_range(at_least=0, unit="seconds"))
    max_delay: float = attrs.field(default=30.0, validator=bandoneon.in_range(at_least=0, unit="seconds"))
    deadline: float | None = attrs.field(default=120.0, validator=bandoneon.in_range(above=0, unit="seconds", optional=True))
    seed: int | None = None
    fallback: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    random: Callable[[], float] = attrs.field(init=False, repr=False, default=attrs.Factory(_jitter_source, takes_self=True))
    clock: Callable[[], float] = attrs.field(init=False, repr=False, default=time.monotonic)

    def __attrs_post_init__(self) -> None:
        if self.max_delay < self.base_delay:
            raise bandoneon.ConfigError(f"retry: max_delay ({self.max_delay}) must be at least base_delay ({self.base_delay})")
        if self.fallback and not all(isinstance(model, str) and ":" in model for model in self.fallback):
            raise bandoneon.ConfigError(f"retry: fallback must list model strings such as 'ollama:llama3.1', got {self.fallback!r}")

    @property
    def unused_hooks(self) -> frozenset[str]:  # type: ignore[override]
        """``agent_created`` only adds the fallbacks (``Plugin.unused_hooks``)."""
        return frozenset() if self.fallback else _NO_FALLBACKS

    @bandoneon.hookimpl
    def agent_created(self, agent: bandoneon.Agent) -> None:
        for model in self.fallback:
            agent.add_fallback(model)

    @bandoneon.hookimpl
    async def retry_delay(self, run: bandoneon.RunContext, error: Exception, attempt: int) -> bandoneon.Retry | None:
        if not getattr(error, "retryable", False):
            return None  # 400/401/403/404/422, a broken reply, a stream cut mid-way: retrying won't help
        if attempt >= self.max_attempts:
            log.info("giving up after %d attempts: %s", attempt, error)
            return None
        now = self.clock()
        if attempt == 1:
            run.stash[_STATE] = now  # the first failure of this model call
        first_failure = run.stash.get(_STATE, now)
        delay = await self._delay(run, error, attempt)
        if self.deadline is not None and (now - first_failure) + delay > self.deadline:
            log.info("giving up: the next attempt would start after the retry deadline of %gs: %s", self.deadline, error)
            return None
        return bandoneon.Retry(delay, self.max_attempts)

    async def _delay(self, run: bandoneon.RunContext, error: Exception, attempt: int) -> float:
        requested = server_delay(error)
        if requested is None:
            return full_jitter(attempt, self.base_delay, self.max_delay, self.random)
        if requested <= self.max_delay:
            return requested
        log.warning("the server asked to wait %gs (Retry-After); waiting max_delay=%gs instead: %s", requested, self.max_delay, error)
        if run.wants_events:
            await run.emit(RetryAfterCapped(run.run_id, requested, self.max_delay, str(error)))
        return self.max_delay
