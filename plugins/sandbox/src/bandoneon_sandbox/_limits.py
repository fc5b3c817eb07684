"""What a box may use, and the errors a sandbox raises.

The limits are checked when they are built (an agent with a bad limit is a ``ConfigError``
at creation, not a surprise on the first call).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

import attrs

import bandoneon

__all__ = ["INSTALL_HINT", "RANGES", "Limits", "SandboxUnavailable", "resolve_mount"]

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`)"

#: Places inside the box that belong to the box itself; a mounted folder may not cover them,
#: nor any folder above them (a mount at /opt hides the interpreter at /opt/python). /sbin and
#: /lib32 are the box's links into /usr too (a mount there covers /usr/sbin).
RESERVED_PATHS = ("/", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/proc", "/dev", "/tmp", "/box", "/opt/python")


class SandboxUnavailable(bandoneon.ToolError):
    """The box cannot be built here, so the code was NOT run (never run unsandboxed instead).

    A ``ToolError``: the model reads the message as the tool's error result, and so does the
    person reading the transcript, which says what to install.
    """


#: The range of each limit. Below ~64 MiB of address space the interpreter itself cannot
#: start (every run would fail with a MemoryError that looks like the code's fault); a box
#: needs two processes, its init and the program.
RANGES = {
    "timeout": bandoneon.in_range(above=0, unit="seconds"),
    "memory_mb": bandoneon.in_range(at_least=64, unit="MiB", integer=True),
    "max_processes": bandoneon.in_range(at_least=2, integer=True),
    "max_output_bytes": bandoneon.in_range(at_least=1, integer=True),
    "tmp_mb": bandoneon.in_range(at_least=1, unit="MiB", integer=True),
}


@attrs.frozen
class Limits:
    """Caps on one run of the box. Every run gets all of them; none can be switched off.

    ``timeout`` (seconds, wall clock: the whole box is killed when it passes), ``memory_mb``
    (address space of each process, RLIMIT_AS), ``max_processes`` (processes and threads the
    box may hold at once), ``max_output_bytes`` (kept of stdout and of stderr, each),
    ``tmp_mb`` (size of the box's scratch /tmp).
    """

    name: ClassVar[str] = "sandbox"

    timeout: float = attrs.field(default=10.0, validator=RANGES["timeout"])
    memory_mb: int = attrs.field(default=256, validator=RANGES["memory_mb"])
    max_processes: int = attrs.field(default=32, validator=RANGES["max_processes"])
    max_output_bytes: int = attrs.field(default=16_000, validator=RANGES["max_output_bytes"])
    tmp_mb: int = attrs.field(default=64, validator=RANGES["tmp_mb"])


def resolve_mount(mount: str | os.PathLike[str] | None, mount_at: str) -> tuple[Path | None, str]:
    """Check the one folder the box may read: it exists, is a folder, and lands somewhere harmless."""
    if not mount_at.startswith("/") or ".." in Path(mount_at).parts:
        raise bandoneon.ConfigError(f"sandbox option mount_at must be an absolute path without '..', got {mount_at!r}")
    # normpath keeps a leading "//" (POSIX lets it mean something else), but the kernel mounts
    # "//usr" on /usr: strip it so every spelling is checked as the place it lands on.
    target = "/" + os.path.normpath(mount_at).lstrip("/")
    for reserved in RESERVED_PATHS:
        if target == reserved or (reserved != "/" and (target.startswith(reserved + "/") or reserved.startswith(target + "/"))):
            raise bandoneon.ConfigError(f"sandbox option mount_at={mount_at!r} would cover the box's own {reserved}; pick another place, e.g. /data")
    if mount is None:
        return None, target
    folder = Path(mount).expanduser().resolve()
    if not folder.is_dir():
        raise bandoneon.ConfigError(f"sandbox option mount={str(mount)!r} is not an existing folder")
    return folder, target
