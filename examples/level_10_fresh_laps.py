"""Level 10 · Fresh laps: a bridge of 36 bricks across the canyon, built in laps.

No lap remembers the last one. Each lap is a new agent with an empty history: it reads the
progress note, lays at most 12 bricks, writes the note for whoever comes next, and ends.
Between laps YOUR code measures the bridge (not the model's word), and the fuse is
max_laps. The lap count is kept on disk: stop the script halfway and run it again, and it
carries on from the lap it reached.

Run it against any model: ``BANDONEON_MODEL=ollama:llama3.1 python examples/level_10_fresh_laps.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import bandoneon
from bandoneon_laps import GoalResult, LapRecord, progress_tools, run_goal_loop_sync

GAP = 36
GOAL = (
    "Build the bridge to the exit: 36 bricks. Read the progress note first, lay at most 12 bricks, "
    "then update the progress note."
)


def bridge_length(folder: Path) -> int:
    """The work itself, measured on disk."""
    bridge = folder / "bridge.json"
    return json.loads(bridge.read_text())["length"] if bridge.exists() else 0


def bridge_tools(folder: Path) -> list[bandoneon.Tool]:
    def lay_bricks(start: int, count: int) -> str:
        """Lay up to 12 bricks of the bridge, starting at brick number `start` (1-based).

        Args:
            start: the number of the first brick to lay.
            count: how many bricks, 1 to 12.
        """
        if start < 1 or not 1 <= count <= 12:
            raise bandoneon.ToolError("start must be at least 1 and count between 1 and 12.")
        if start > bridge_length(folder) + 1:
            raise bandoneon.ToolError(f"Brick {start} would float in the air: the bridge is {bridge_length(folder)} bricks long.")
        end = min(start + count - 1, GAP)
        # Safe to repeat: laying bricks that are already there changes nothing.
        (folder / "bridge.json").write_text(json.dumps({"length": max(bridge_length(folder), end)}))
        return f"Laid bricks {start}-{end}. The bridge is {bridge_length(folder)} bricks long."

    return [bandoneon.tool(lay_bricks), *progress_tools(folder / "PROGRESS.md")]


def build_agent(model: str | bandoneon.Provider | None = None, folder: str | Path = "canyon") -> bandoneon.Agent:
    """One lap's agent: new every lap, same tools, same folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return bandoneon.Agent(model, tools=bridge_tools(folder), max_turns=8, context_files=False)


def main(model: str | bandoneon.Provider | None = None, folder: str | Path = "canyon") -> GoalResult:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)

    def on_lap(record: LapRecord) -> None:
        print(f"lap {record.lap}: {record.stop}, bridge {bridge_length(folder)}/{GAP} — {record.text or record.error}")

    result = run_goal_loop_sync(
        GOAL,
        make_agent=lambda: build_agent(model, folder),  # a NEW agent every lap: empty history
        is_done=lambda: bridge_length(folder) >= GAP,  # the work itself, not the model's word
        max_laps=5,  # the fuse
        on_lap=on_lap,
        state_file=folder / "laps.json",  # survives a restart
    )
    print(f"{result.stop}: done={result.done} after {result.laps} laps, {result.usage.total_tokens} tokens")
    return result


if __name__ == "__main__":
    main()
