"""bandoneon-plan: write the plan first, check the work before accepting it (level 12)."""

from .plugin import Plan, PlanItem, plan_of
from ._reflect import Escalation, ReflectResult, critic, reflect, reflect_sync

__all__ = ["Escalation", "Plan", "PlanItem", "ReflectResult", "critic", "plan_of", "reflect", "reflect_sync"]
