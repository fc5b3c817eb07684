"""bandoneon-stop: when to stop (level 4 of the Agent Harness Patterns track).

Terminal tools end the run with their validated input as the answer; error streaks and
budgets (tokens, cost, wall time) end it as stated limits; an optional wrap-up call turns a
limit into a best-effort text without pretending it was an answer.
"""

from .plugin import DEFAULT_GIVE_UP_TEXT, DEFAULT_WRAP_UP_TEXT, LIMITS, BudgetWarning, StopRules

__all__ = ["DEFAULT_GIVE_UP_TEXT", "DEFAULT_WRAP_UP_TEXT", "LIMITS", "BudgetWarning", "StopRules"]
