"""``subagent(...)``: a fresh agent per call, exposed to its parent as one tool.

The parent model writes a brief (``task``); a new agent with an empty history, its own
system prompt, tools and (optionally) model does the errand; only its final text comes back.
What astorlm's children skip, this one keeps: the parent's policy packs, guard rules and
plugins answering ``inherited_by_subagents`` (tracing, guard) apply inside the child, the child's usage
is added to the parent's, and its run is linked to the parent run (``run.parent``,
``run_start.parent_run_id``, ``subagent_event`` for the parent's listeners).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from typing import Annotated, Any, cast

import attrs

import bandoneon

from . import hookspecs as subagent_hooks
from ._events import SubagentEvent

__all__ = ["DEFAULT_MAX_DEPTH", "subagent"]

#: The range of each numeric option of a subagent (in code and in ``[plugins.subagents]``).
RANGES = {
    "max_turns": bandoneon.in_range(at_least=1, integer=True),
    "max_depth": bandoneon.in_range(at_least=1, integer=True),
    "run_timeout": bandoneon.in_range(above=0, unit="seconds", optional=True),
}

#: How deep subagents may nest unless told otherwise: a parent's subagents may not start
#: subagents of their own. Each level multiplies the calls, and a failure deep down
#: arrives as one confusing line (level 15, "What to watch").
DEFAULT_MAX_DEPTH = 1

#: The deepest level the subagents being run in this context may reach: the smallest
#: ``max_depth`` of every subagent above. A child's own subagent tools cannot raise the limit
#: its parent set (``max_depth=1`` means no grandchildren, whatever the child's tools say).
_DEPTH_LIMIT: ContextVar[int | None] = ContextVar("bandoneon_subagents_depth_limit", default=None)

_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}\Z")
_DELTAS = frozenset({"text_delta", "tool_call_delta"})

BRIEF_HINT = "Give it a full brief: it knows nothing else about the conversation."
TASK_DESCRIPTION = (
    "The whole brief: the goal, the constraints, and what a good answer looks like. "
    "The subagent has not seen this conversation."
)


def _inherited(parent: bandoneon.Agent) -> list[object]:
    """The plugins that answer the ``inherited_by_subagents`` hook (guard, tracing) follow the
    parent into every child. Installed policy packs need no handing on: the core puts them in
    every agent, the child included."""
    if not parent.hooks.implements(subagent_hooks.inherited_by_subagents):
        return []
    inherited: list[object] = parent.hooks.call_sync(subagent_hooks.inherited_by_subagents, parent=parent)
    return inherited


def _name_of(plugin: object) -> str:
    return plugin if isinstance(plugin, str) else bandoneon.plugin_name(plugin)


@attrs.frozen
class _Subagent:
    """The recipe of one subagent; ``run`` starts a new agent from it for every brief."""

    name: str
    model: str | bandoneon.Provider | None
    system_prompt: str
    tools: tuple[bandoneon.Tool, ...]
    max_turns: int
    plugins: tuple[object, ...] | None
    max_depth: int
    run_timeout: float | None
    forward_events: bool

    def child_plugins(self, parent: bandoneon.Agent) -> list[object]:
        """What the child activates: the given plugins (or the parent's default ones), plus
        every plugin of the parent that answers ``inherited_by_subagents`` (guard, tracing),
        as the same instances (same rules, one trace)."""
        if self.plugins is None:
            chosen: list[object] = [p for p in parent.plugins if getattr(type(p), "is_default", False)]
        else:
            chosen = list(self.plugins)
        names = {_name_of(p) for p in chosen}
        for plugin in _inherited(parent):
            name = bandoneon.plugin_name(plugin)
            if name not in names:
                chosen.append(plugin)
                names.add(name)
            elif not any(p is plugin for p in chosen):
                # One name, one plugin per agent: the child's own would silently take the place of
                # the parent's (a looser guard, or a default one, and the parent's rules are gone).
                raise bandoneon.ConfigError(
                    f"subagent {self.name!r} brings its own {name!r} plugin, which would replace the parent's: "
                    f"the parent's {name!r} follows it into every child, so leave it out of the subagent's plugins"
                )
        return chosen

    def child_agent(self, run: bandoneon.RunContext) -> bandoneon.Agent:
        parent = run.agent
        return bandoneon.Agent(
            self.model if self.model is not None else _models_from(run),
            tools=self.tools,
            system_prompt=self.system_prompt,
            context_files=False,
            max_turns=self.max_turns,
            plugins=self.child_plugins(parent),
            run_timeout=self.run_timeout,
            config=parent.config,
            cwd=parent.cwd,
            name=f"{parent.name}/{self.name}",
        )

    async def run(self, task: str, run: bandoneon.RunContext) -> Any:
        brief = task.strip()
        if not brief:
            raise bandoneon.ToolError(
                f"The brief for {self.name} is empty, so it was not started. Write the whole task: "
                "the goal, the constraints and what a good answer looks like."
            )
        depth = run.depth + 1
        above = _DEPTH_LIMIT.get()
        limit = self.max_depth if above is None else min(above, self.max_depth)
        if depth > limit:
            raise bandoneon.ToolError(
                f"{self.name} was not started: subagents may nest {limit} level(s) deep and this "
                f"call would be level {depth}. Do this errand with your own tools."
            )
        try:
            child = self.child_agent(run)
        except bandoneon.BandoneonError as exc:
            raise bandoneon.ToolError(f"{self.name} could not be started: {exc}") from None
        spent: list[bandoneon.Usage] = []
        child.on("run_end", lambda event: spent.append(cast(bandoneon.RunEnd, event).usage))
        if self.forward_events and run.wants_events:
            self._forward(child, run)
        limited = _DEPTH_LIMIT.set(limit)  # the child's own subagents nest no deeper than this
        try:
            result = await child.run(brief, parent=run)
        except bandoneon.BandoneonError as exc:
            raise bandoneon.ToolError(f"{self.name} failed before it could answer: {exc}") from None
        finally:
            _DEPTH_LIMIT.reset(limited)
            # The run_end event carries the usage even when the child raised or was cancelled.
            for usage in spent:
                run.usage = run.usage + usage
        return self._answer(result)

    def _forward(self, child: bandoneon.Agent, run: bandoneon.RunContext) -> None:
        """Every event of the child reaches the parent run as a ``subagent_event``. Deltas only
        when the parent itself streams, so a child is not switched to streaming requests just
        because it has a listener."""

        async def forward(event: bandoneon.Event) -> None:
            await run.emit(SubagentEvent(run.run_id, self.name, event))

        names = bandoneon.event_names() if run.wants_deltas else bandoneon.event_names() - _DELTAS
        for name in sorted(names):
            child.on(name, forward)

    def _answer(self, result: bandoneon.RunResult) -> Any:
        if result.ok:
            if result.answer is not None:
                return result.answer
            if result.text:
                return result.text
            raise bandoneon.ToolError(f"{self.name} finished with an empty answer. Give it a clearer brief, or do the errand yourself.")
        said = f" Its last words: {result.text}" if result.text else ""
        detail = f": {result.detail}" if result.detail else ""
        raise bandoneon.ToolError(f"{self.name} ended without an answer (stop={result.stop}{detail}).{said}")


def subagent(
    name: str,
    description: str,
    *,
    model: str | bandoneon.Provider | None = None,
    system_prompt: str = "",
    tools: Iterable[bandoneon.Tool | Callable[..., Any]] = (),
    max_turns: int = 10,
    plugins: Sequence[object | str] | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
    run_timeout: float | None = None,
    forward_events: bool = True,
) -> bandoneon.Tool:
    """A tool that runs a fresh agent on the parent model's brief and returns its final text.

    :param name: the tool's name, as the parent model sees it (``milonga_scout``).
    :param description: what it is for; a reminder to write a full brief is appended.
    :param model: the child's model (a string or a provider); None: the parent run's provider.
    :param system_prompt: the child's system prompt. Ask for a short, fixed shape of answer.
    :param tools: the child's own tools (only those its errand needs).
    :param max_turns: the child's turn limit.
    :param plugins: the child's plugins (instances or names). None: the parent's active
        default plugins (retry...). Either way the parent's policy packs, ``guard`` and plugins
        answering ``inherited_by_subagents`` are added.
    :param max_depth: how many levels of subagents may nest (1: a child cannot start another).
    :param run_timeout: seconds a child may run.
    :param forward_events: the parent run emits each of the child's events as a ``subagent_event``.
    :raises ConfigError: on a bad name or limit, when the tool is made (not when it is called).
    """
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        raise bandoneon.ConfigError(f"subagent name {name!r} must be 1-64 letters, digits, '_' or '-', starting with a letter or '_'")
    if not description or not description.strip():
        raise bandoneon.ConfigError(f"subagent {name!r} needs a description: it is how the parent model knows when to call it")
    for option, value in (("max_turns", max_turns), ("max_depth", max_depth), ("run_timeout", run_timeout)):
        RANGES[option].check(option, value, owner=f"subagent {name!r}")
    recipe = _Subagent(
        name=name,
        model=model,
        system_prompt=system_prompt,
        tools=tuple(t if isinstance(t, bandoneon.Tool) else bandoneon.tool(t) for t in tools),
        max_turns=max_turns,
        plugins=tuple(plugins) if plugins is not None else None,
        max_depth=max_depth,
        run_timeout=run_timeout,
        forward_events=forward_events,
    )

    async def run_subagent(task: Annotated[str, TASK_DESCRIPTION], run: bandoneon.RunContext) -> Any:
        return await recipe.run(task, run)

    text = description.strip()
    if BRIEF_HINT not in text:
        text = f"{text} {BRIEF_HINT}"
    return bandoneon.tool(run_subagent, name=name, description=text)


def _models_from(run: bandoneon.RunContext) -> list[bandoneon.Provider]:
    """The parent run's model now (a fallback, if the run fell back) and the fallbacks after it."""
    models = run.agent.models
    start = next((i for i, provider in enumerate(models) if provider is run.provider), 0)
    return list(models[start:])
