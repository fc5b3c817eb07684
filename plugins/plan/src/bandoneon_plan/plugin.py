"""The plan: a list the model writes and ticks with tools, shown in full in every request.

However long the history gets, the model always sees what is done and what is left,
because the plan is a system-prompt section rebuilt for every request. It lives on the
plugin instance (one per agent), so it carries over from run to run like the history;
with ``plan_file`` it is also kept on disk, written atomically after every change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import attrs

import bandoneon

from bandoneon import write_atomically

__all__ = ["Plan", "PlanItem", "plan_of"]

Status = Literal["pending", "in_progress", "completed", "cancelled"]

GUIDE = (
    "For a job with several steps, write the plan with add_plan_item before you act, one small "
    "checkable task each; mark each task with update_plan_item as you go. Change the plan when "
    "reality changes (remove_plan_item, reorder_plan). Skip it for a one-step request."
)


@attrs.frozen
class PlanItem:
    id: int
    description: str
    status: Status = "pending"


@attrs.define
class Plan(bandoneon.Plugin):
    """Adds the plan tools and puts the whole plan in every request. ``agent.plugin(Plan).plan`` reads it.

    ``items`` starts the plan with these items (``plan_file``, when it exists, wins).
    ``escalate``: when ``reflect``'s review rounds run out with findings open, ask a person
    through the human plugin (the default of ``reflect(..., on_exhausted=)`` for this agent).
    """

    name: ClassVar[str] = "plan"
    plan_file: str | None = None
    guide: str = GUIDE
    escalate: bool = False
    # An init argument (``items``) so that ``agent.fork()``, which copies plugins with
    # ``attrs.evolve``, gives the fork a copy of the plan along with the history.
    _items: list[PlanItem] = attrs.field(factory=list, converter=list, alias="items")

    def __attrs_post_init__(self) -> None:
        if self.plan_file is not None and Path(self.plan_file).exists():
            try:
                # Bounded: a file nested without end is a ConfigError, not a RecursionError.
                data = bandoneon.loads_bounded(Path(self.plan_file).read_text(encoding="utf-8"))
                self._items = [bandoneon.structure(item, PlanItem) for item in data["items"]]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise bandoneon.ConfigError(f"plan_file {self.plan_file}: not a plan ({exc}); move it away to start over") from None

    # ---------------------------------------------------------------- reading

    @property
    def plan(self) -> tuple[PlanItem, ...]:
        """The plan as it stands, in order."""
        return tuple(self._items)

    def render(self) -> str:
        if not self._items:
            return "(no plan yet)"
        return "\n".join(f"- [{item.status}] {item.description} (id {item.id})" for item in self._items)

    # ---------------------------------------------------------------- changing

    def _save(self) -> None:
        if self.plan_file is not None:
            data = {"items": [bandoneon.unstructure(item) for item in self._items]}
            write_atomically(Path(self.plan_file), json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    def _index(self, item_id: int) -> int:
        for index, item in enumerate(self._items):
            if item.id == item_id:
                return index
        known = ", ".join(str(item.id) for item in self._items) or "none yet"
        raise bandoneon.ToolError(f"There is no task {item_id}. Task ids: {known}.")

    def add(self, description: str, after_id: int | None = None) -> PlanItem:
        if not description.strip():
            raise bandoneon.ToolError("The task description is empty. Describe one small, checkable task.")
        item = PlanItem(max((i.id for i in self._items), default=0) + 1, description.strip())
        position = len(self._items) if after_id is None else self._index(after_id) + 1
        self._items.insert(position, item)
        self._save()
        return item

    def update(self, item_id: int, status: Status | None = None, description: str | None = None) -> PlanItem:
        index = self._index(item_id)
        if description is not None and not description.strip():
            raise bandoneon.ToolError("The new description is empty; leave it out to keep the old one.")
        changes: dict[str, Any] = {}
        if status is not None:
            changes["status"] = status
        if description is not None:
            changes["description"] = description.strip()
        self._items[index] = attrs.evolve(self._items[index], **changes)
        self._save()
        return self._items[index]

    def remove(self, item_id: int) -> PlanItem:
        item = self._items.pop(self._index(item_id))
        self._save()
        return item

    def reorder(self, ids: list[int]) -> None:
        known = [item.id for item in self._items]
        if sorted(ids) != sorted(known):
            missing = sorted(set(known) - set(ids))
            unknown = sorted(set(ids) - set(known))
            problems = [f"missing {missing}" if missing else "", f"unknown {unknown}" if unknown else "", "repeated ids" if len(set(ids)) != len(ids) else ""]
            raise bandoneon.ToolError(f"reorder_plan needs every task id exactly once ({', '.join(p for p in problems if p)}). Task ids: {known}.")
        by_id = {item.id: item for item in self._items}
        self._items = [by_id[i] for i in ids]
        self._save()

    # ---------------------------------------------------------------- hooks

    @bandoneon.hookimpl
    def register_tools(self, agent: bandoneon.Agent) -> list[bandoneon.Tool]:
        plan = self

        def add_plan_item(
            description: Annotated[str, "one small, checkable task"],
            after_id: Annotated[int | None, "insert after this task (default: at the end)"] = None,
        ) -> str:
            """Add a task to the plan."""
            item = plan.add(description, after_id)
            return f"Task added with id {item.id}.\n{plan.render()}"

        def update_plan_item(
            id: Annotated[int, "the task's id"],
            status: Annotated[Status | None, "the new status"] = None,
            description: Annotated[str | None, "a new description"] = None,
        ) -> str:
            """Change a task's status (pending, in_progress, completed, cancelled) or description."""
            item = plan.update(id, status, description)
            return f"Task {item.id} is now {item.status}."

        def remove_plan_item(id: Annotated[int, "the task's id"]) -> str:
            """Remove a task that is no longer needed."""
            item = plan.remove(id)
            return f"Removed task {item.id} ({item.description})."

        def reorder_plan(ids: Annotated[list[int], "every task id, in the new order"]) -> str:
            """Put the tasks in a new order."""
            plan.reorder(ids)
            return f"New order:\n{plan.render()}"

        return [bandoneon.tool(f) for f in (add_plan_item, update_plan_item, remove_plan_item, reorder_plan)]

    @bandoneon.hookimpl
    def system_prompt_sections(self, run: bandoneon.RunContext) -> str:
        return f"# Plan\n{self.guide}\n\n{self.render()}" if self.guide else f"# Plan\n{self.render()}"


def plan_of(agent: bandoneon.Agent) -> tuple[PlanItem, ...]:
    """The plan of ``agent`` (``KeyError`` if the plan plugin is not active in it)."""
    return agent.plugin("plan").plan
