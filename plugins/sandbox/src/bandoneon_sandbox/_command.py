"""The bubblewrap command line: what the box contains, and nothing else.

The box is an empty root (a tmpfs) holding: /usr read-only (with the /bin, /lib, /lib64
links of a merged-/usr system), the Python interpreter read-only, a fresh /proc of its own
pid namespace, a minimal /dev, a size-capped /tmp, the program at /box/main.py, and — only
when asked — one host folder read-only. No /etc, no /home, no /root, no host /tmp.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import attrs

from ._limits import Limits

__all__ = ["BWRAP_PROCESSES", "BoxPlan", "Interpreter", "LAUNCHER", "find_interpreter"]

BOX_UID = 65534  # "nobody": the program never runs as uid 0 inside its namespace.
#: bwrap's own processes in the box's counts, on top of the ``max_processes`` the code may
#: have: its init (pid 1 of the box) for RLIMIT_NPROC; for a pids cgroup also the outer bwrap.
BOX_INIT_PROCESSES = 1
BWRAP_PROCESSES = 2
PYTHON_AT = "/opt/python"

#: Runs first inside the box: sets the caps on itself, then becomes a fresh interpreter
#: running the program. Limits set here bind the program and everything it starts.
LAUNCHER = b"""\
import os, resource, sys
address_space, cpu_seconds, processes, file_bytes = map(int, sys.argv[1:5])
for limit, soft, hard in (
    (resource.RLIMIT_AS, address_space, address_space),
    (resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1),
    (resource.RLIMIT_NPROC, processes, processes),
    (resource.RLIMIT_FSIZE, file_bytes, file_bytes),
    (resource.RLIMIT_CORE, 0, 0),
    (resource.RLIMIT_MSGQUEUE, 0, 0),
):
    resource.setrlimit(limit, (soft, hard))
os.execv(sys.executable, [sys.executable, "-I", "-B", "/box/main.py"])
"""


@attrs.frozen
class Interpreter:
    """A Python on the host, and where it appears inside the box."""

    prefix: Path  # the host folder to bind (None of it is writable in the box)
    executable_in_box: str
    needs_bind: bool

    @property
    def library_path(self) -> str | None:
        # A relocated interpreter keeps an absolute RUNPATH to its host prefix; point the
        # loader at the bound copy of libpython instead.
        return f"{PYTHON_AT}/lib" if self.needs_bind else None


def find_interpreter(python: str | os.PathLike[str] | None = None) -> Interpreter:
    """The interpreter the box runs: ``python`` or this process's base interpreter (not its venv).

    The venv's packages stay outside: the box sees the standard library, not the host's
    project environment.
    """
    if python is None:
        executable = Path(os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable))
        prefix = Path(os.path.realpath(sys.base_prefix))
    else:
        executable = Path(os.path.realpath(python))
        prefix = executable.parent.parent
    if not executable.is_file():
        raise FileNotFoundError(f"no Python interpreter at {executable}")
    if executable.is_relative_to("/usr"):
        return Interpreter(prefix=Path("/usr"), executable_in_box=str(executable), needs_bind=False)
    if not executable.is_relative_to(prefix):
        raise FileNotFoundError(f"the interpreter {executable} is not inside its prefix {prefix}")
    return Interpreter(prefix=prefix, executable_in_box=f"{PYTHON_AT}/{executable.relative_to(prefix)}", needs_bind=True)


@attrs.frozen
class BoxPlan:
    """Everything one run needs to become a bwrap command line."""

    bwrap: str
    interpreter: Interpreter
    limits: Limits
    mount: Path | None = None
    mount_at: str = "/data"

    def argv(self, launcher_fd: int, program_fd: int, seccomp_fd: int | None = None) -> list[str]:
        limits = self.limits
        args = [
            self.bwrap,
            "--unshare-all",  # network, pid, ipc, uts, cgroup namespaces: nothing shared
            "--unshare-user",  # required, not "try": without a user namespace we refuse to run
            "--die-with-parent",
            "--new-session",  # no TIOCSTI into the caller's terminal
            "--uid", str(BOX_UID), "--gid", str(BOX_UID),
            "--cap-drop", "ALL",
            "--hostname", "sandbox",
            "--clearenv",
            "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
            "--setenv", "HOME", "/tmp",
            "--setenv", "LANG", "C.UTF-8",
        ]
        if self.interpreter.library_path:
            args += ["--setenv", "LD_LIBRARY_PATH", self.interpreter.library_path]
        args += ["--ro-bind", "/usr", "/usr"]
        for name in ("bin", "sbin", "lib", "lib32", "lib64"):
            host = Path("/", name)
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), str(host)]
            elif host.is_dir():
                args += ["--ro-bind", str(host), str(host)]
        if self.interpreter.needs_bind:
            args += ["--ro-bind", str(self.interpreter.prefix), PYTHON_AT]
        if self.mount is not None:
            args += ["--ro-bind", str(self.mount), self.mount_at]
        args += [
            "--proc", "/proc",
            "--dev", "/dev",
            # /dev (and /dev/shm inside it) is a tmpfs of its own, outside tmp_mb: read-only, so
            # the box's one writable place is the size-capped /tmp. Device nodes still work.
            "--remount-ro", "/dev",
            "--size", str(limits.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp",
            "--dir", "/box",
            "--ro-bind-data", str(launcher_fd), "/box/launch.py",
            "--ro-bind-data", str(program_fd), "/box/main.py",
            "--remount-ro", "/",  # the box's own root too: /tmp is the one writable place
            "--chdir", "/tmp",
            *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []),
            "--",
            self.interpreter.executable_in_box, "-I", "-S", "/box/launch.py",
            str(limits.memory_mb * 1024 * 1024),
            str(max(1, int(limits.timeout + 0.999))),
            # RLIMIT_NPROC counts the box's init (bwrap's pid 1, same uid) besides the program.
            str(limits.max_processes + BOX_INIT_PROCESSES),
            str(limits.tmp_mb * 1024 * 1024),
        ]
        return args
