"""The walls of the box: each test runs code that tries to get out, and checks it failed.

Skipped, with the reason, on machines where bubblewrap cannot build a box (probed once).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest
from bandoneon_sandbox import Box, Limits, check_sandbox, format_result

UNAVAILABLE = asyncio.run(check_sandbox())
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no sandbox on this machine: {UNAVAILABLE}")

TRY_READ = """
import sys
for path in sys.argv[1:] if len(sys.argv) > 1 else PATHS:
    try:
        with open(path) as f:
            print("READ", path, f.read()[:40])
    except OSError as exc:
        print("BLOCKED", path, type(exc).__name__)
"""


def host_processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def eventually_gone(marker: str) -> list[int]:
    """SIGKILL is delivered asynchronously: give the kernel a moment to reap, then report survivors."""
    for _ in range(100):
        if not host_processes_with(marker):
            return []
        await asyncio.sleep(0.02)
    return host_processes_with(marker)


# ---------------------------------------------------------------- what works


async def test_normal_code_runs_and_its_stdout_comes_back():
    result = await Box().run("print(sum(range(10)))")
    assert result.ok and result.stdout == "45\n"


async def test_stderr_and_exit_code_are_reported():
    result = await Box().run("import sys\nprint('bad input', file=sys.stderr)\nsys.exit(3)")
    assert result.exit_code == 3 and result.stderr == "bad input\n" and not result.ok


async def test_long_output_is_truncated_with_a_note():
    limits = Limits(max_output_bytes=1000)
    result = await Box(limits=limits).run("print('x' * 100_000)")
    assert len(result.stdout) == 1000 and result.stdout_dropped == 100_001 - 1000
    assert "stdout truncated: 99001 more bytes" in format_result(result, limits)


# ---------------------------------------------------------------- the walls


async def test_the_hosts_environment_is_not_in_the_box(monkeypatch):
    monkeypatch.setenv("BANDONEON_TEST_SECRET", "s3cr3t-value-1234")
    code = """
import os
print(dict(os.environ))
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            print(pid, open(f'/proc/{pid}/environ', 'rb').read())
        except OSError as exc:
            print(pid, type(exc).__name__)
"""
    result = await Box().run(code)
    assert result.ok, result.stderr
    assert "s3cr3t-value-1234" not in result.stdout + result.stderr
    assert "BANDONEON_TEST_SECRET" not in result.stdout


async def test_host_files_cannot_be_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the ledger")
    paths = [str(secret), "/etc/shadow", "/etc/passwd", "/root/.bashrc", "/root/.profile", str(Path.home() / ".bash_history")]
    result = await Box().run(f"PATHS = {paths!r}\n" + TRY_READ)
    assert result.ok, result.stderr
    assert "READ" not in result.stdout and "the ledger" not in result.stdout
    assert result.stdout.count("BLOCKED") == len(paths)


async def test_home_and_root_folders_are_not_there():
    result = await Box().run("import os\nprint(sorted(os.listdir('/')))\nprint(os.path.exists('/root'), os.path.exists('/home'), os.path.exists('/etc'))")
    assert result.ok, result.stderr
    assert result.stdout.splitlines()[1] == "False False False"


async def test_a_socket_cannot_reach_the_host():
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    code = f"""
import socket
print(sorted(name for _, name in socket.if_nameindex()))
for host in ("127.0.0.1", "10.0.0.1", "1.1.1.1"):
    try:
        socket.create_connection((host, {port}), timeout=1)
        print("CONNECTED", host)
    except OSError as exc:
        print("BLOCKED", host, type(exc).__name__)
"""
    try:
        result = await Box().run(code)
        thread = threading.Thread(target=accept)
        thread.start()
        thread.join()
    finally:
        server.close()
    assert result.ok, result.stderr
    assert result.stdout.splitlines()[0] == "['lo']"  # its own loopback, nothing else
    assert "CONNECTED" not in result.stdout and result.stdout.count("BLOCKED") == 3
    assert accepted == []


async def test_the_mounted_folder_is_read_only(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "scroll.txt").write_text("original")
    code = """
print(open('/data/scroll.txt').read())
for attempt in ("open('/data/scroll.txt', 'w').write('changed')", "open('/data/new.txt', 'w').write('x')", "__import__('os').remove('/data/scroll.txt')"):
    try:
        exec(attempt)
        print("WROTE")
    except OSError as exc:
        print("BLOCKED", exc.errno)
"""
    result = await Box(mount=folder).run(code)
    assert result.ok, result.stderr
    assert result.stdout.splitlines()[0] == "original"
    assert "WROTE" not in result.stdout and result.stdout.count("BLOCKED 30") == 3  # EROFS
    assert (folder / "scroll.txt").read_text() == "original" and sorted(p.name for p in folder.iterdir()) == ["scroll.txt"]


async def test_the_system_folders_are_read_only():
    code = """
for path in ('/usr/evil', '/opt/python/evil', '/box/main.py', '/evil'):
    try:
        open(path, 'w').write('x')
        print("WROTE", path)
    except OSError as exc:
        print("BLOCKED", path)
"""
    result = await Box().run(code)
    assert result.ok, result.stderr
    assert "WROTE" not in result.stdout and result.stdout.count("BLOCKED") == 4


async def test_tmp_writes_vanish_after_the_run_and_never_reach_the_host():
    name = f"bandoneon-sandbox-{uuid.uuid4().hex}"
    box = Box()
    first = await box.run(f"open('/tmp/{name}', 'w').write('left behind')\nprint('written')")
    second = await box.run(f"import os\nprint(os.path.exists('/tmp/{name}'), os.listdir('/tmp'))")
    assert first.stdout == "written\n"
    assert second.stdout == "False []\n"
    assert not Path("/tmp", name).exists()


async def test_a_fork_bomb_is_bounded_by_the_process_cap():
    limits = Limits(max_processes=8, timeout=5)
    code = """
import os, time
started = 0
for _ in range(200):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        started += 1
    except OSError:
        break
print(started)
"""
    result = await Box(limits=limits).run(code)
    assert result.ok, result.stderr
    assert int(result.stdout) == 7  # the program and 7 children: max_processes is what the code may hold


async def test_a_fork_bomb_ends_with_a_clear_message():
    limits = Limits(max_processes=16, timeout=5)
    result = await Box(limits=limits).run("import os\nwhile True:\n    os.fork()")
    assert result.hit_process_limit
    assert "process limit" in format_result(result, limits)


async def test_running_past_the_deadline_kills_the_code_and_its_children():
    # The program sleeps: it uses no CPU time, so the CPU cap (RLIMIT_CPU) cannot be what stops
    # it, only the wall-clock deadline can. The outer bound turns a broken kill into a failure
    # (the box would sleep for an hour) instead of a hung test run.
    marker = f"{time.time_ns() % 10**9}.{os.getpid()}"
    code = f"import subprocess, time\nsubprocess.Popen(['sleep', '{marker}'])\ntime.sleep(3600)"
    limits = Limits(timeout=1)
    result = await asyncio.wait_for(Box(limits=limits).run(code), 60)
    assert result.timed_out and result.exit_code is None
    assert "time limit" in format_result(result, limits)
    assert await eventually_gone(marker) == []


async def test_a_busy_loop_is_stopped_at_the_deadline_too():
    limits = Limits(timeout=1)
    result = await asyncio.wait_for(Box(limits=limits).run("while True:\n    pass"), 60)
    # Whichever wall comes first, the wall-clock deadline or the CPU-time cap, the code is killed.
    assert not result.ok and format_result(result, limits).startswith("Killed")


async def test_cancelling_the_run_kills_the_code():
    marker = f"{time.time_ns() % 10**9}.{os.getpid()}1"
    code = f"import subprocess\nsubprocess.Popen(['sleep', '{marker}']).wait()"
    task = asyncio.ensure_future(Box(limits=Limits(timeout=30)).run(code))
    for _ in range(250):
        if host_processes_with(marker):
            break
        await asyncio.sleep(0.02)
    assert host_processes_with(marker), "the box never started"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await eventually_gone(marker) == []


async def test_a_memory_hog_is_stopped_with_a_clear_message():
    limits = Limits(memory_mb=128)
    result = await Box(limits=limits).run("hog = bytearray(512 * 1024 * 1024)\nprint('allocated')")
    assert result.out_of_memory and "allocated" not in result.stdout
    assert "memory limit (128 MiB)" in format_result(result, limits)


async def test_every_run_gets_a_fresh_box_even_in_parallel():
    box = Box()
    code = "import os\nopen('/tmp/mine', 'x').write('1')\nprint(os.getpid(), os.listdir('/tmp'))"
    results = await asyncio.gather(*(box.run(code) for _ in range(3)))
    assert all(r.ok and r.stdout.endswith("['mine']\n") for r in results), [r.stderr for r in results]
