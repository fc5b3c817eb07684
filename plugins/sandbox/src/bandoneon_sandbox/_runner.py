"""One run of one fresh box, on asyncio subprocesses: the event loop never blocks.

The time cap kills the code, not just the waiting: on the deadline (or when the caller is
cancelled) bwrap's whole process group gets SIGKILL, its sandboxed init dies with it
(``--die-with-parent``) and the kernel kills everything left in the box's pid namespace;
when a pids cgroup is in use, every process listed in it is killed too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

import attrs

from ._cgroup import ProcessGroupCap
from ._command import LAUNCHER, BoxPlan
from ._seccomp import program

__all__ = ["BoxResult", "run_in_box"]

#: bwrap itself starts with an empty environment too: its sandboxed init is a fork of it,
#: and a box can read its init's /proc/1/environ.
BWRAP_ENVIRONMENT = {"PATH": "/usr/bin:/bin"}
PIPE_GRACE = 2.0  # seconds to collect the last output once the box is gone
_JOIN_CGROUP = 'echo $$ > "$1" && shift && exec "$@"'


@attrs.frozen
class BoxResult:
    """What one run did. ``exit_code`` is None when the box was killed (``timed_out``).

    ``stdout_dropped`` / ``stderr_dropped`` count the bytes past ``max_output_bytes`` that were
    read and thrown away. ``out_of_memory`` and ``hit_process_limit`` say which cap stopped it.
    """

    exit_code: int | None
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    out_of_memory: bool = False
    hit_process_limit: bool = False
    stdout_dropped: int = 0
    stderr_dropped: int = 0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class _Capture:
    """Keeps the first ``limit`` bytes of a stream and counts the rest while draining it,
    so a chatty program can neither fill our memory nor block on a full pipe."""

    def __init__(self, limit: int):
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            room = max(0, self.limit - len(self.kept))
            self.kept += chunk[:room]
            self.dropped += len(chunk) - min(room, len(chunk))

    @property
    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


def _memfd(name: str, data: bytes) -> int:
    """An anonymous in-memory file: bwrap copies it into the box, nothing touches the host disk."""
    fd = os.memfd_create(name, 0)
    try:
        _write_all(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _kill(process: asyncio.subprocess.Process, cap: ProcessGroupCap | None) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if cap is not None:
        cap.kill_all()


async def run_in_box(plan: BoxPlan, code: str, cap: ProcessGroupCap | None = None) -> BoxResult:
    """Run ``code`` as ``/box/main.py`` in a fresh box built from ``plan``.

    ``cap`` (a pids cgroup, already created) is joined by the box before bwrap starts and
    removed afterwards, whatever happens.
    """
    contents = [LAUNCHER, code.encode("utf-8", errors="surrogateescape")]
    seccomp = program()
    if seccomp is not None:
        contents.append(seccomp)
    fds: list[int] = []
    try:
        for index, data in enumerate(contents):
            fds.append(_memfd(f"bandoneon-box-{index}", data))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    argv = plan.argv(*fds)
    if cap is not None:
        argv = ["/bin/sh", "-c", _JOIN_CGROUP, "sh", cap.procs_file, *argv]
    started = time.monotonic()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            pass_fds=tuple(fds),
            env=BWRAP_ENVIRONMENT,
            cwd="/",  # not the host's working directory: the box could read it from /proc/1/environ (PWD)
            start_new_session=True,  # its own process group, so one killpg reaches bwrap and its helpers
        )
    except BaseException:
        if cap is not None:
            await cap.remove()
        raise
    finally:
        for fd in fds:
            os.close(fd)

    out, err = _Capture(plan.limits.max_output_bytes), _Capture(plan.limits.max_output_bytes)
    assert process.stdout is not None and process.stderr is not None  # both are pipes (above)
    readers = [asyncio.ensure_future(out.drain(process.stdout)), asyncio.ensure_future(err.drain(process.stderr))]
    timed_out = False
    try:
        try:
            async with asyncio.timeout(plan.limits.timeout):
                await process.wait()
        except TimeoutError:
            timed_out = True
            _kill(process, cap)
            await process.wait()
        _, still_reading = await asyncio.wait(readers, timeout=PIPE_GRACE)
        for reader in still_reading:
            reader.cancel()
    except BaseException:
        # Cancelled from outside (agent.cancel(), the run's timeout): the code dies too.
        _kill(process, cap)
        for reader in readers:
            reader.cancel()
        # Reap bwrap and empty the cgroup before letting the cancellation through; shielded,
        # so a second cancellation leaves the cleanup running instead of half done.
        cleanup = asyncio.ensure_future(_reap(process, cap))
        _keep_alive(cleanup)
        await asyncio.shield(cleanup)
        raise
    hit_process_limit = False
    if cap is not None:
        hit_process_limit = cap.hit_limit()
        await cap.remove()
    stderr = err.text
    return BoxResult(
        exit_code=None if timed_out else process.returncode,
        stdout=out.text,
        stderr=stderr,
        duration=time.monotonic() - started,
        timed_out=timed_out,
        out_of_memory="MemoryError" in stderr,
        hit_process_limit=hit_process_limit or "BlockingIOError: [Errno 11]" in stderr,
        stdout_dropped=out.dropped,
        stderr_dropped=err.dropped,
    )


async def _reap(process: asyncio.subprocess.Process, cap: ProcessGroupCap | None) -> None:
    await process.wait()
    if cap is not None:
        await cap.remove()


_cleanups: set[asyncio.Future[None]] = set()


def _keep_alive(task: asyncio.Future[None]) -> None:
    """Hold a reference to a background cleanup until it ends (asyncio keeps only weak ones)."""
    _cleanups.add(task)
    task.add_done_callback(_cleanups.discard)
