"""bandoneon-evals: evals for agents (level 11 of the Agent Harness Patterns track).

``run_eval(dataset, make_agent, scorers)`` runs every case with a fresh agent and returns a
``Report``; the ``evals`` plugin class only adds the ``bandoneon eval`` commands.
"""

from __future__ import annotations

from typing import Any, ClassVar

import bandoneon

from .dataset import Case, DatasetError, load_dataset
from .record import RecordingProvider, ReplayMismatch, ReplayProvider
from .report import CaseSummary, Regression, Report, ReportError, compare, load_report
from .runner import CaseRun, Progress, evaluate, run_case, run_eval
from .scorers import JudgeError, Sample, Score, Scorer, contains, custom, exact, judge, regex, tool_calls_of, trajectory

__all__ = [
    "Case",
    "CaseRun",
    "CaseSummary",
    "DatasetError",
    "Evals",
    "JudgeError",
    "Progress",
    "RecordingProvider",
    "Regression",
    "ReplayMismatch",
    "ReplayProvider",
    "Report",
    "ReportError",
    "Sample",
    "Score",
    "Scorer",
    "compare",
    "contains",
    "custom",
    "evaluate",
    "exact",
    "judge",
    "load_dataset",
    "load_report",
    "regex",
    "run_case",
    "run_eval",
    "tool_calls_of",
    "trajectory",
]


class Evals(bandoneon.Plugin):
    """Adds ``bandoneon eval run|compare|worker``. Evals run agents; they do not hook into one."""

    name: ClassVar[str] = "evals"

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers: Any) -> None:
        from .cli import register

        register(subparsers)
