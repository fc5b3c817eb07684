"""The box's bounds are real: no writable place outside the counted /tmp, no kernel object that
holds memory outside the count, and max_processes is what the code may hold, as root and as an
ordinary user. Skipped, with the reason, where bubblewrap cannot build a box."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import pytest
from bandoneon_sandbox import Box, Limits, check_sandbox

UNAVAILABLE = asyncio.run(check_sandbox())
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no sandbox on this machine: {UNAVAILABLE}")

FILL_EVERYWHERE = r"""
import ctypes, errno, os
MB = b"x" * (1 << 20)

def fill(path):
    written = 0
    try:
        with open(path, "wb") as f:
            for _ in range(200):
                f.write(MB)
                f.flush()
                written += 1
    except OSError as exc:
        return written, errno.errorcode.get(exc.errno, str(exc.errno))
    return written, "ok"

for place in ["/dev/shm/x", "/dev/x", "/x", "/box/x", "/proc/x", "/usr/x", "/opt/python/x", "/tmp/a", "/tmp/b"]:
    print(place, *fill(place))
try:
    os.memfd_create("hoard")
    print("memfd_create", "ok")
except OSError as exc:
    print("memfd_create", errno.errorcode[exc.errno])
libc = ctypes.CDLL(None, use_errno=True)
print("shmget", "ok" if libc.shmget(0, 1 << 20, 0o1600) >= 0 else errno.errorcode[ctypes.get_errno()])
"""


async def test_writes_anywhere_stay_within_the_documented_bound():
    """memory_mb=64, max_processes=3, tmp_mb=16: nothing beyond the size-capped /tmp can be written,
    and no memory file or System V segment can hold memory outside the count."""
    result = await Box(limits=Limits(memory_mb=64, max_processes=3, tmp_mb=16, timeout=20)).run(FILL_EVERYWHERE)
    assert result.ok, result.stderr
    seen = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    for place in ("/dev/shm/x", "/dev/x", "/x", "/box/x", "/usr/x", "/opt/python/x"):
        assert seen[place] == "0 EROFS", (place, seen[place])
    assert seen["/proc/x"].startswith("0 ")
    assert seen["/tmp/a"] == "16 EFBIG"  # one file: at most tmp_mb
    assert seen["/tmp/b"] == "0 ENOSPC"  # the tmpfs is full: tmp_mb in total
    assert seen["memfd_create"] == "EPERM" and seen["shmget"] == "EPERM"


COUNT_FORKS = """
import os, time
children = 0
for _ in range(50):
    try:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        children += 1
    except OSError:
        break
print(children)
"""


@pytest.mark.parametrize("max_processes", [2, 5])
async def test_max_processes_is_what_the_code_may_hold_whatever_the_uid(max_processes):
    result = await Box(limits=Limits(max_processes=max_processes, timeout=20)).run(COUNT_FORKS)
    assert result.ok, result.stderr
    assert int(result.stdout) == max_processes - 1  # the program itself and its children


AS_AN_ORDINARY_USER = """
import asyncio, site, sys
site.addsitedir(sys.argv[1])
from bandoneon_sandbox import Box, Limits
result = asyncio.run(Box(limits=Limits(max_processes=2, timeout=20), python=sys.executable).run(sys.argv[2]))
print(result.exit_code, result.stdout.strip(), result.stderr.strip()[-300:])
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to an ordinary user needs root")
def test_the_documented_minimum_works_for_an_ordinary_user_too():
    """The same box, started by uid 65534 (nobody): the minimum max_processes runs the code."""
    system_python = shutil.which("python3", path="/usr/bin:/bin")
    if system_python is None or subprocess.run([system_python, "-c", "import sys; sys.exit(sys.version_info[:2] != %r)" % (sys.version_info[:2],)]).returncode:
        pytest.skip("no system Python of this version that an ordinary user can run")
    site_packages = sysconfig.get_paths()["purelib"]
    as_nobody = {"user": 65534, "group": 65534, "extra_groups": [], "capture_output": True, "text": True, "cwd": "/", "env": {"PATH": "/usr/bin:/bin"}}
    probe = subprocess.run([system_python, "-c", "import site, sys; site.addsitedir(sys.argv[1]); import bandoneon_sandbox", site_packages], **as_nobody)
    if probe.returncode:
        pytest.skip(f"an ordinary user cannot import this environment's packages: {probe.stderr.strip()[-200:]}")
    done = subprocess.run(
        [system_python, "-c", textwrap.dedent(AS_AN_ORDINARY_USER), site_packages, COUNT_FORKS], timeout=60, **as_nobody
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["0", "1"], done.stdout  # exit 0, one child besides the program
