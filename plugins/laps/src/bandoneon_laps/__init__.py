"""bandoneon-laps: run a long job in fresh laps, checked by your code (level 10)."""

from ._loop import GoalResult, LapRecord, run_goal_loop, run_goal_loop_sync
from .plugin import LAP_INSTRUCTIONS, Laps
from ._progress import progress_tools

__all__ = ["LAP_INSTRUCTIONS", "GoalResult", "LapRecord", "Laps", "progress_tools", "run_goal_loop", "run_goal_loop_sync"]
