"""bandoneon-evals: evals for agents (level 11 of the Agent Harness Patterns track).

``run_eval(dataset, make_agent, scorers)`` runs every case with a fresh agent and returns a
``Report``; the ``evals`` plugin class only adds the ``bandoneon eval`` commands.
"""

from .cases import add_case, case_from_messages, case_from_trace
from .dataset import Case, DatasetError, load_dataset
from .plugin import Evals
from .record import CaseReplay, RecordingProvider, ReplayMismatch, ReplayProvider, replay_model
from .report import CaseSummary, Regression, Report, ReportError, compare, load_report
from .runner import CaseRun, Progress, evaluate, run_case, run_eval
from .scorers import JudgeError, Sample, Score, Scorer, contains, custom, exact, judge, regex, stop_reason, tool_calls_of, tool_errors, trajectory

__all__ = [
    "Case",
    "CaseReplay",
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
    "add_case",
    "case_from_messages",
    "case_from_trace",
    "compare",
    "contains",
    "custom",
    "evaluate",
    "exact",
    "judge",
    "load_dataset",
    "load_report",
    "regex",
    "replay_model",
    "run_case",
    "run_eval",
    "stop_reason",
    "tool_calls_of",
    "tool_errors",
    "trajectory",
]

