"""The stop plugin: the exits of level 4 and the error counter of level 5, as hooks."""

from __future__ import annotations

import functools
import math
import warnings
from typing import ClassVar

import attrs

import bandoneon

from ._budget import cost_over, run_cost, time_over, tokens_over
from ._streak import ErrorStreak
from ._watchdog import RepeatWatch
from ._wrap_up import wrap_up_message, wrap_up_request

__all__ = ["DEFAULT_GIVE_UP_TEXT", "DEFAULT_WRAP_UP_TEXT", "LIMITS", "BudgetWarning", "StopRules"]

DEFAULT_GIVE_UP_TEXT = (
    "You may give up. If a few searches come back empty, or the task cannot be done with the "
    "tools you have, stop calling tools and say plainly what you could not find or do, and why. "
    "An honest 'I couldn't find it' is a good answer; guessing is not."
)

DEFAULT_WRAP_UP_TEXT = (
    "Do not call any tools. Give your best answer now from what you have found so far. "
    "Keep the ids, names and numbers you found, and say clearly what is still missing or unsure."
)

#: The limits a wrap-up can follow: ``StopRules(wrap_up_on=LIMITS)`` wraps up after any of them.
LIMITS = ("max_turns", "budget", "timeout", "error_streak", "no_progress")

_STATE: bandoneon.StashKey[_RunState] = bandoneon.StashKey("stop")


class BudgetWarning(UserWarning):
    """A cost budget is set but the run's cost is unknown (no price from the provider or the options)."""


@attrs.define
class _RunState:
    streak: ErrorStreak | None
    repeats: RepeatWatch | None
    warned_unpriced: bool = False


@functools.cache
def _unused_hooks(budget: bool, give_up: bool, wrap_up: bool, stop_on: bool, watchdog: bool) -> frozenset[str]:
    """The hooks that have nothing to do with these options (``Plugin.unused_hooks``): with the
    defaults, a run calls only ``should_stop`` and the watchdog's ``after_tool_execution``."""
    needed = {"before_turn": budget, "system_prompt_sections": give_up, "wrap_up": wrap_up, "agent_created": stop_on, "after_tool_execution": watchdog}
    return frozenset(hook for hook, used in needed.items() if not used)


@attrs.define
class StopRules(bandoneon.Plugin):
    """Ends a run on a terminal tool, an error streak, a budget or a model repeating itself;
    can wrap up a limit.

    Active by default once installed, so ``@tool(terminal=True)`` works out of the box; with
    no options it looks for terminal tools in each turn's results and watches for the same call
    repeated ``no_progress_after`` times in a row (default 3; 0 switches the watchdog off).
    Error streaks, budgets, the wrap-up and the give-up instruction are opt-in.
    """

    name: ClassVar[str] = "stop"
    is_default: ClassVar[bool] = True

    stop_on: tuple[str, ...] = ()
    max_errors_in_a_row: int | None = attrs.field(default=None, validator=bandoneon.in_range(at_least=1, integer=True, optional=True))
    #: 0 switches the no-progress watchdog off.
    no_progress_after: int = attrs.field(default=3, validator=bandoneon.in_range(at_least=0, integer=True))
    max_tokens: int | None = attrs.field(default=None, validator=bandoneon.in_range(at_least=1, integer=True, optional=True))
    max_cost: float | None = attrs.field(default=None, validator=bandoneon.in_range(above=0, optional=True))
    price_per_million_tokens: tuple[float, float] | None = None
    max_seconds: float | None = attrs.field(default=None, validator=bandoneon.in_range(above=0, unit="seconds", optional=True))
    wrap_up_on: tuple[str, ...] = ()
    wrap_up_text: str = DEFAULT_WRAP_UP_TEXT
    permission_to_give_up: bool = False
    give_up_text: str = DEFAULT_GIVE_UP_TEXT

    def __attrs_post_init__(self) -> None:
        # `not 0 <= p < inf` also refuses nan (TOML has it), which made every run stop at once on "cost nan".
        if self.price_per_million_tokens is not None and any(not 0 <= p < math.inf for p in self.price_per_million_tokens):
            raise bandoneon.ConfigError(f"stop: price_per_million_tokens must be finite and not negative, got {self.price_per_million_tokens!r}")
        if self.stop_on and not all(isinstance(name, str) and name for name in self.stop_on):
            raise bandoneon.ConfigError(f"stop: stop_on must list tool names, got {self.stop_on!r}")
        if self.wrap_up_on and not all(isinstance(reason, str) and reason for reason in self.wrap_up_on):
            raise bandoneon.ConfigError(f"stop: wrap_up_on must list stop reasons such as {', '.join(LIMITS)}, got {self.wrap_up_on!r}")
        if self.wrap_up_on and not self.wrap_up_text.strip():
            raise bandoneon.ConfigError("stop: wrap_up_text is empty; the wrap-up call needs an instruction")

    @property
    def unused_hooks(self) -> frozenset[str]:  # type: ignore[override]
        """The hooks these options leave nothing to do (``Plugin.unused_hooks``): worked out when
        an agent is built with this instance, not when the instance is."""
        return _unused_hooks(self.has_budget, self.permission_to_give_up, bool(self.wrap_up_on), bool(self.stop_on), bool(self.no_progress_after))

    @property
    def has_budget(self) -> bool:
        return self.max_tokens is not None or self.max_cost is not None or self.max_seconds is not None

    # ---------------------------------------------------------------- hooks

    @bandoneon.hookimpl
    def agent_created(self, agent: bandoneon.Agent) -> None:
        """A ``stop_on`` name that is no tool would never stop anything: say so now."""
        unknown = [name for name in self.stop_on if name not in agent.tools]
        if unknown:
            tools = ", ".join(sorted(agent.tools)) or "none"
            raise bandoneon.ConfigError(f"stop: stop_on names {', '.join(map(repr, unknown))}, which the agent has no tool for; its tools: {tools}")

    @bandoneon.hookimpl
    def system_prompt_sections(self) -> str | None:
        return self.give_up_text if self.permission_to_give_up else None

    @bandoneon.hookimpl
    def before_turn(self, run: bandoneon.RunContext) -> bandoneon.Stop | None:
        """Budgets are checked before the next model call, so they end a run before spending."""
        if not self.has_budget:
            return None
        return self._over_budget(run)

    @bandoneon.hookimpl
    def after_tool_execution(self, run: bandoneon.RunContext, result: bandoneon.ToolResult) -> str | None:
        """The no-progress watchdog: the call that repeats the same call ``no_progress_after``
        times in a row carries a note telling the model so."""
        if not self.no_progress_after:
            return None
        watch = self._state(run).repeats
        assert watch is not None
        return result.content + watch.note() if watch.record(result) else None

    @bandoneon.hookimpl
    def should_stop(self, run: bandoneon.RunContext, turn: bandoneon.Turn) -> bandoneon.Stop | None:
        for result in turn.tool_results:
            if result.is_error or result.arguments is None:
                continue
            tool = run.tools.get(result.call.name)
            if (tool is not None and tool.terminal) or result.call.name in self.stop_on:
                return bandoneon.Stop("terminal_tool", f"{result.call.name} ran without error", answer=dict(result.arguments), is_answer=True)
        if self.no_progress_after:
            watch = self._state(run).repeats
            if watch is not None and watch.is_over:
                return watch.stop()
        if self.max_errors_in_a_row is not None:
            streak = self._state(run).streak
            assert streak is not None
            streak.record(turn.tool_results)
            if streak.is_over:
                return streak.stop()
        if self.has_budget:
            return self._over_budget(run)
        return None

    @bandoneon.hookimpl
    async def wrap_up(self, run: bandoneon.RunContext, stop: bandoneon.Stop) -> bandoneon.Message | None:
        if stop.reason not in self.wrap_up_on:
            return None
        # The loop's own last request (side calls other plugins make do not replace it).
        request = wrap_up_request(run, run.last_request, stop, self.wrap_up_text)
        return await wrap_up_message(run, request)

    # ---------------------------------------------------------------- helpers

    def _state(self, run: bandoneon.RunContext) -> _RunState:
        state = run.stash.get(_STATE)
        if state is None:
            streak = ErrorStreak(self.max_errors_in_a_row) if self.max_errors_in_a_row is not None else None
            repeats = RepeatWatch(self.no_progress_after) if self.no_progress_after else None
            state = run.stash[_STATE] = _RunState(streak, repeats)
        return state

    def _over_budget(self, run: bandoneon.RunContext) -> bandoneon.Stop | None:
        usage = run.usage
        if self.max_tokens is not None and (stop := tokens_over(usage, self.max_tokens)):
            return stop
        if self.max_cost is not None:
            cost = run_cost(usage, self.price_per_million_tokens)
            if cost is not None:
                if stop := cost_over(cost, self.max_cost):
                    return stop
            elif usage.requests and not self._state(run).warned_unpriced:
                self._state(run).warned_unpriced = True
                warnings.warn(
                    f"stop: max_cost={self.max_cost:g} cannot be enforced: the provider reports no price; "
                    "set price_per_million_tokens=(input, output) on the stop plugin",
                    BudgetWarning,
                    stacklevel=2,
                )
        if self.max_seconds is not None:
            return time_over(run.elapsed, self.max_seconds)
        return None
