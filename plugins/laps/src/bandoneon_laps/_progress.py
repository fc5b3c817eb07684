"""The progress note: the only handover from one lap to the next."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import bandoneon

from bandoneon import write_atomically

NOTHING_YET = "Nothing written yet: this is the first lap."


def progress_tools(path: str | os.PathLike[str] = "PROGRESS.md") -> list[bandoneon.Tool]:
    """``read_progress`` and ``write_progress`` over the note at ``path`` (overwritten atomically,
    so a lap that dies while writing leaves the previous note intact)."""
    note = Path(path)

    def read_progress() -> str:
        """Read the progress note: what earlier laps did, what comes next, what failed. Read it first."""
        try:
            text = note.read_text(encoding="utf-8")
        except FileNotFoundError:
            return NOTHING_YET
        return text if text.strip() else NOTHING_YET

    def write_progress(text: Annotated[str, "the whole note: what is done, what comes next, what you tried that failed"]) -> str:
        """Overwrite the progress note for whoever comes next. Write it before you end."""
        if not text.strip():
            raise bandoneon.ToolError("The note is empty, so the old one was kept. Write what is done and what comes next.")
        write_atomically(note, text if text.endswith("\n") else text + "\n")
        return f"Saved the progress note ({len(text)} characters)."

    return [bandoneon.tool(read_progress), bandoneon.tool(write_progress)]
