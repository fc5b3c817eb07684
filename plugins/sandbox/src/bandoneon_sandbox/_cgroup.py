"""A pids cgroup per run: the process cap that holds when the host user is root.

RLIMIT_NPROC is counted per host user, and the kernel never applies it to host uid 0 — and a
box started by root is uid 0 on the host, whatever uid it shows inside its namespace. So when
we run as root the fork wall is a pids cgroup (v2 at /sys/fs/cgroup, or v1's pids hierarchy)
with ``pids.max``; it also lists every process of the box, so a timeout can kill them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from pathlib import Path

__all__ = ["ProcessGroupCap", "find_pids_hierarchy"]

CGROUP_ROOT = Path("/sys/fs/cgroup")


def find_pids_hierarchy() -> Path | None:
    """A cgroup folder where we may create children with a ``pids.max``, or None."""
    v2_controls = CGROUP_ROOT / "cgroup.subtree_control"
    with contextlib.suppress(OSError):
        if "pids" in v2_controls.read_text().split() and os.access(CGROUP_ROOT, os.W_OK):
            return CGROUP_ROOT
    v1 = CGROUP_ROOT / "pids"
    if (v1 / "cgroup.procs").exists() and os.access(v1, os.W_OK):
        return v1
    return None


class ProcessGroupCap:
    """One run's cgroup: created with a pids limit, emptied and removed after the run."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, hierarchy: Path, max_processes: int) -> ProcessGroupCap:
        path = hierarchy / f"bandoneon-sandbox-{uuid.uuid4().hex[:12]}"
        path.mkdir()
        try:
            (path / "pids.max").write_text(str(max_processes))
        except OSError:
            path.rmdir()
            raise
        return cls(path)

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def members(self) -> list[int]:
        with contextlib.suppress(OSError):
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        return []

    def hit_limit(self) -> bool:
        """Did a fork fail because of ``pids.max``? (``pids.events``: ``max N``)."""
        with contextlib.suppress(OSError, ValueError):
            for line in (self.path / "pids.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "max":
                    return int(value) > 0
        return False

    def kill_all(self) -> None:
        kill_file = self.path / "cgroup.kill"  # v2: one write kills the whole cgroup
        if kill_file.exists():
            with contextlib.suppress(OSError):
                kill_file.write_text("1")
        for pid in self.members():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    async def remove(self, attempts: int = 50) -> None:
        """Kill what is left and remove the cgroup (it must be empty to be removed)."""
        for _ in range(attempts):
            self.kill_all()
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                await asyncio.sleep(0.02)
