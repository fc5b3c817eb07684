"""``mount_at`` cannot land on (or above) the box's own folders, however the path is spelled.

The kernel reads ``//usr``, ``/usr/``, ``/./usr`` as ``/usr``; ``/opt`` holds the interpreter
at ``/opt/python`` (a mount there hides it); ``/sbin`` and ``/lib32`` are the box's links into
``/usr`` (a mount there covers ``/usr/sbin``). Each is a ``ConfigError`` naming the option.
"""

from __future__ import annotations

import posixpath

import bandoneon
import pytest
from bandoneon_sandbox import run_code_tool
from hypothesis import given
from hypothesis import strategies as st

# The box's own places, as bwrap builds them (see _command.BoxPlan.argv).
BOX_OWN = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/proc", "/dev", "/tmp", "/box", "/opt/python")


@pytest.mark.parametrize(
    "mount_at",
    ["//usr", "///usr", "/usr/", "/./usr", "//usr/share", "/usr/../usr", "//", "/.", "/opt", "//opt/", "/opt/python/lib", "/sbin", "/lib32/x", "//tmp"],
)
def test_a_mount_over_the_box_s_own_folders_is_refused_however_spelled(tmp_path, mount_at):
    with pytest.raises(bandoneon.ConfigError, match="mount_at"):
        run_code_tool(mount=str(tmp_path), mount_at=mount_at)


@pytest.mark.parametrize(("mount_at", "lands"), [("/data", "/data"), ("//data//in/", "/data/in"), ("/./srv/x", "/srv/x"), ("/optional", "/optional"), ("/usrdata", "/usrdata")])
def test_a_harmless_place_is_kept_in_its_plain_spelling(tmp_path, mount_at, lands):
    tool = run_code_tool(mount=str(tmp_path), mount_at=mount_at)
    assert f"The folder {lands} holds files" in tool.description


def _covers(place: str) -> bool:
    """Whether a mount at ``place`` (already resolved) lands on, under or above a box folder."""
    return place == "/" or any(place == own or place.startswith(own + "/") or own.startswith(place + "/") for own in BOX_OWN)


segment = st.sampled_from(["usr", "opt", "python", "tmp", "sbin", "lib32", "box", "dev", "data", "srv", "x", ".", "", "proc"])


@given(st.lists(segment, min_size=1, max_size=5), st.booleans())
def test_no_spelling_of_a_box_folder_gets_through(tmp_path_factory, parts, trailing):
    mount_at = "/" + "/".join(parts) + ("/" if trailing else "")
    place = "/" + posixpath.normpath(mount_at).lstrip("/")  # what the kernel mounts on
    folder = tmp_path_factory.mktemp("mount")
    if _covers(place):
        with pytest.raises(bandoneon.ConfigError, match="mount_at"):
            run_code_tool(mount=str(folder), mount_at=mount_at)
    else:
        assert f"The folder {place} holds" in run_code_tool(mount=str(folder), mount_at=mount_at).description
