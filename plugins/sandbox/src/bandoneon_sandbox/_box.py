"""``Box``: a recipe for sandboxes. Every ``run`` builds a fresh box from it and throws it away.

Before the first run it checks, once per process, that a box can really be built here; when
it cannot, the run raises ``SandboxUnavailable`` saying what to install or change, and the
code is not run — there is no unsandboxed fallback.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ._cgroup import ProcessGroupCap, find_pids_hierarchy
from ._command import BWRAP_PROCESSES, BoxPlan, Interpreter, find_interpreter
from ._limits import INSTALL_HINT, Limits, SandboxUnavailable, resolve_mount
from ._runner import BoxResult, run_in_box

__all__ = ["Box", "check_sandbox"]

NOT_RUN = "The code was not run."
_PROBE = "print('box ok')"
_probed: dict[tuple[str, str], str | None] = {}


class Box:
    """Runs Python in a fresh bubblewrap box per call, with ``limits`` and at most one read-only folder.

    ``mount`` is a host folder the code may read, at ``mount_at`` (default ``/data``);
    ``bwrap_path`` a name on PATH or a path; ``python`` the interpreter to run (default: the
    base interpreter of this process, without its virtualenv's packages).
    """

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        mount: str | os.PathLike[str] | None = None,
        mount_at: str = "/data",
        bwrap_path: str = "bwrap",
        python: str | os.PathLike[str] | None = None,
    ):
        self.limits = limits or Limits()
        self.mount, self.mount_at = resolve_mount(mount, mount_at)
        self.bwrap_path = bwrap_path
        self.python = python

    async def run(self, code: str) -> BoxResult:
        """Run ``code`` in a new box; raises ``SandboxUnavailable`` if no box can be built."""
        plan = await self._plan()
        if self.mount is not None and not self.mount.is_dir():
            raise SandboxUnavailable(f"the folder to mount, {self.mount}, no longer exists. {NOT_RUN}")
        return await run_in_box(plan, code, self._process_cap())

    async def _plan(self) -> BoxPlan:
        bwrap = locate_bwrap(self.bwrap_path)
        try:
            interpreter = find_interpreter(self.python)
        except FileNotFoundError as exc:
            raise SandboxUnavailable(f"{exc}. {NOT_RUN}") from None
        plan = BoxPlan(bwrap, interpreter, self.limits, self.mount, self.mount_at)
        problem = await _probe(bwrap, interpreter)
        if problem:
            raise SandboxUnavailable(problem)
        return plan

    def _process_cap(self) -> ProcessGroupCap | None:
        # RLIMIT_NPROC (set inside the box) binds every host user except root; for root the
        # cap is a pids cgroup, and without one we refuse rather than run an unbounded box.
        if os.geteuid() != 0:
            return None
        hierarchy = find_pids_hierarchy()
        if hierarchy is None:
            raise SandboxUnavailable(
                "running as root, the box's process cap needs a writable pids cgroup (cgroup v2 with the "
                "pids controller at /sys/fs/cgroup, or v1's /sys/fs/cgroup/pids) and none was found; "
                f"run the agent as a non-root user, or enable the pids controller. {NOT_RUN}"
            )
        try:
            return ProcessGroupCap.create(hierarchy, self.limits.max_processes + BWRAP_PROCESSES)
        except OSError as exc:
            raise SandboxUnavailable(f"cannot create a pids cgroup under {hierarchy}: {exc}. {NOT_RUN}") from None


def locate_bwrap(bwrap_path: str) -> str:
    """The absolute path of the bwrap binary, or ``SandboxUnavailable`` saying what to install."""
    if os.sep in bwrap_path:
        found = bwrap_path if os.access(bwrap_path, os.X_OK) and Path(bwrap_path).is_file() else None
    else:
        found = shutil.which(bwrap_path)
    if found is None:
        raise SandboxUnavailable(f"bubblewrap is not installed (no executable {bwrap_path!r} found): {INSTALL_HINT}. {NOT_RUN}")
    return os.path.abspath(found)


async def _probe(bwrap: str, interpreter: Interpreter) -> str | None:
    """Build one tiny box, once per process and setup: can this machine create the namespaces?"""
    key = (bwrap, interpreter.executable_in_box)
    if key not in _probed:
        _probed[key] = await _probe_once(bwrap, interpreter)
    return _probed[key]


async def _probe_once(bwrap: str, interpreter: Interpreter) -> str | None:
    limits = Limits(timeout=15)
    cap = None
    if os.geteuid() == 0 and (hierarchy := find_pids_hierarchy()) is not None:
        cap = ProcessGroupCap.create(hierarchy, limits.max_processes + BWRAP_PROCESSES)
    try:
        result = await run_in_box(BoxPlan(bwrap, interpreter, limits), _PROBE, cap)
    except OSError as exc:
        return f"bubblewrap at {bwrap} could not be started: {exc}. {NOT_RUN}"
    if result.ok and result.stdout.strip() == "box ok":
        return None
    detail = (result.stderr.strip() or result.stdout.strip() or f"exit code {result.exit_code}").splitlines()[-1]
    return (
        f"bubblewrap at {bwrap} cannot build a box on this machine ({detail}). It needs user namespaces: "
        "check `sysctl user.max_user_namespaces` (> 0), `kernel.unprivileged_userns_clone=1` on Debian kernels, "
        f"or AppArmor's userns restriction on Ubuntu; in a container, allow it to create namespaces. {NOT_RUN}"
    )


async def check_sandbox(*, bwrap_path: str = "bwrap", python: str | os.PathLike[str] | None = None) -> str | None:
    """None when a box can be built here, otherwise the reason (what to install or change)."""
    try:
        box = Box(bwrap_path=bwrap_path, python=python)
        await box._plan()
        cap = box._process_cap()
        if cap is not None:
            await cap.remove()
    except SandboxUnavailable as exc:
        return str(exc)
    return None
