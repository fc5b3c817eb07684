"""A seccomp filter that closes the box's ways to hold memory outside its counted places.

RLIMIT_AS bounds each process's mappings and the size-capped /tmp bounds files, but two kinds
of kernel object keep memory that neither counts: anonymous memory files (``memfd_create``,
``memfd_secret``: each may grow to RLIMIT_FSIZE, and a process may open hundreds) and System V
shared memory (``shmget``: a segment outlives its mappings until the box's IPC namespace dies).
POSIX message queues are closed by RLIMIT_MSGQUEUE = 0 in the launcher, and this filter refuses
``mq_open`` too. The filter answers those calls with EPERM and allows everything else; calls made
through another ABI (32-bit ``int 0x80``, x32) are refused whole, since their numbers differ.

The program is classic BPF, built here as bytes (``struct sock_filter`` records) and handed to
bubblewrap's ``--seccomp FD``. Only x86-64 and AArch64 are known; elsewhere ``program()`` is None
and the box runs without the filter (the README says so).
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["program"]

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
#: memfd_create, memfd_secret, shmget, mq_open.
_BLOCKED = {"x86_64": (319, 447, 29, 240), "aarch64": (279, 447, 194, 180)}
_X32_BIT = 0x40000000

_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | errno.EPERM
_ARCH_OFFSET, _NR_OFFSET = 4, 0  # struct seccomp_data: int nr; __u32 arch; ...


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine's architecture, or None when it is not a known one."""
    machine = machine or platform.machine()
    if machine not in _AUDIT_ARCH:
        return None
    blocked = _BLOCKED[machine]
    # Layout: [arch check] [load nr] [x32 check] [one JEQ per blocked call] ALLOW EPERM.
    checks = len(blocked)
    ops = [
        _op(_LD_W_ABS, _ARCH_OFFSET),
        _op(_JEQ_K, _AUDIT_ARCH[machine], jt=0, jf=checks + 3),  # another ABI: straight to EPERM
        _op(_LD_W_ABS, _NR_OFFSET),
        _op(_JGE_K, _X32_BIT, jt=checks + 1, jf=0),
    ]
    for index, number in enumerate(blocked):
        ops.append(_op(_JEQ_K, number, jt=checks - index, jf=0))
    ops += [_op(_RET_K, _RET_ALLOW), _op(_RET_K, _RET_EPERM)]
    return b"".join(ops)
