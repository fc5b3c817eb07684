"""The ``run_code`` tool: the box, as the model sees it, and its report written for the model."""

from __future__ import annotations

import logging
import os
import signal

import bandoneon

from ._box import Box
from ._limits import Limits, SandboxUnavailable
from ._runner import BoxResult

__all__ = ["format_result", "run_code_tool"]

log = logging.getLogger("bandoneon_sandbox")

#: Extra seconds the tool's own timeout (enforced by the loop) allows past the box's, so the box's clear
#: "killed at the deadline" report wins over a generic "took too long".
TIMEOUT_MARGIN = 5.0


def run_code_tool(
    *,
    timeout: float = 10.0,
    memory_mb: int = 256,
    max_processes: int = 32,
    max_output_bytes: int = 16_000,
    tmp_mb: int = 64,
    mount: str | os.PathLike[str] | None = None,
    mount_at: str = "/data",
    bwrap_path: str = "bwrap",
    python: str | os.PathLike[str] | None = None,
    name: str = "run_code",
) -> bandoneon.Tool:
    """A ``run_code(code)`` tool that runs Python in a fresh box per call; hand it to ``Agent(tools=[...])``.

    Bad options (a missing ``mount`` folder, a ``mount_at`` over the box's own folders, a
    non-positive limit) are a ``ConfigError`` here, not on the first call.
    """
    box = Box(
        limits=Limits(timeout=timeout, memory_mb=memory_mb, max_processes=max_processes, max_output_bytes=max_output_bytes, tmp_mb=tmp_mb),
        mount=mount,
        mount_at=mount_at,
        bwrap_path=bwrap_path,
        python=python,
    )
    folder = f" The folder {box.mount_at} holds files you may read (read-only)." if box.mount else ""
    description = (
        "Run a Python 3 program and get back its exit code, stdout and stderr. Print what you need to see. "
        "It runs in an isolated sandbox: standard library only, no network, no access to this computer's files, "
        f"a fresh empty /tmp you may write to (gone after the run).{folder} "
        f"Limits: {timeout:g} s, {memory_mb} MiB of memory, {max_output_bytes} bytes of output per stream."
    )

    async def run_code(code: str) -> str:
        """Run a Python 3 program.

        Args:
            code: the complete program, as it would be written in a .py file.
        """
        try:
            result = await box.run(code)
        except SandboxUnavailable as exc:
            log.warning("run_code did not run the code: %s", exc)
            raise
        return format_result(result, box.limits)

    return bandoneon.tool(
        run_code,
        name=name,
        description=description,
        capabilities={"runs_code"},
        timeout=timeout + TIMEOUT_MARGIN,
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def format_result(result: BoxResult, limits: Limits) -> str:
    """The run as the model reads it: how it ended first, then the output with any truncation marked."""
    if result.timed_out:
        head = f"Killed: the program ran past the {limits.timeout:g} s time limit (all its processes were stopped)."
    elif result.hit_process_limit:
        head = f"Stopped by the process limit: the program tried to start more than {limits.max_processes} processes. Exit code: {result.exit_code}."
    elif result.out_of_memory:
        head = f"Stopped by the memory limit ({limits.memory_mb} MiB): the program ran out of memory. Exit code: {result.exit_code}."
    elif result.exit_code is not None and 128 < result.exit_code <= 128 + 64:
        head = f"Killed by signal {_signal_name(result.exit_code - 128)} (exit code {result.exit_code})."
    else:
        head = f"Exit code: {result.exit_code}."
    parts = [head]
    for label, text, dropped in (("stdout", result.stdout, result.stdout_dropped), ("stderr", result.stderr, result.stderr_dropped)):
        if not text and not dropped:
            continue
        section = f"{label}:\n{text}"
        if dropped:
            section += f"\n[{label} truncated: {dropped} more bytes were not kept (limit {limits.max_output_bytes} bytes)]"
        parts.append(section)
    if len(parts) == 1:
        parts.append("(no output)")
    return "\n".join(parts)
