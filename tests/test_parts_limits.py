"""Images and files are read within a size limit: a file too big for any model API (or one that
grows while it is read) and a ``data:`` URL holding more than the limit are a ``ConfigError``
naming the file, its size and the limit, refused before their bytes are read into memory."""

from __future__ import annotations

import base64
import os

import pytest
from bandoneon import ConfigError, FilePart, ImagePart
from bandoneon.parts import MAX_PART_BYTES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

FIXTURE_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def sparse_file(path: os.PathLike[str], size: int) -> None:
    """A file of ``size`` bytes that takes no room on disk (its bytes are never written)."""
    with open(path, "wb") as file:
        file.truncate(size)


@pytest.mark.parametrize("read", [ImagePart.from_path, FilePart.from_path], ids=["image", "file"])
def test_a_file_over_the_default_limit_is_refused_before_it_is_read(tmp_path, read):
    huge = tmp_path / "huge.png"
    sparse_file(huge, MAX_PART_BYTES + 1)
    with pytest.raises(ConfigError, match=rf"huge\.png is {MAX_PART_BYTES + 1:,} bytes, over the limit of {MAX_PART_BYTES:,} bytes") as caught:
        read(huge)
    assert "max_bytes" in str(caught.value)  # it says how to raise the limit


def test_the_default_limit_is_20_mib_and_a_file_of_exactly_that_size_is_read(tmp_path):
    exact = tmp_path / "exact.pdf"
    sparse_file(exact, MAX_PART_BYTES)
    assert MAX_PART_BYTES == 20 * 1024 * 1024
    assert len(FilePart.from_path(exact).data) == MAX_PART_BYTES


@FIXTURE_SETTINGS
@given(tail=st.binary(max_size=64), max_bytes=st.integers(0, 200), is_image=st.booleans())
def test_a_file_is_read_whole_within_the_limit_and_refused_over_it(tmp_path, tail, max_bytes, is_image):
    """Nothing is lost: a file within the limit is read to its last byte; one over it is a
    ConfigError naming the file, its size and the limit."""
    data = PNG + tail if is_image else tail
    path = tmp_path / ("pic.png" if is_image else "notes.bin")
    path.write_bytes(data)
    read = ImagePart.from_path if is_image else FilePart.from_path
    if len(data) <= max_bytes:
        assert read(path, max_bytes=max_bytes).data == data
    else:
        with pytest.raises(ConfigError, match=rf"{path.name} is {len(data):,} bytes, over the limit of {max_bytes:,} bytes"):
            read(path, max_bytes=max_bytes)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc: a regular file whose size says 0")
def test_a_file_bigger_than_its_size_says_is_refused_while_it_is_read():
    """A file that grows while it is read, or whose size lies (``/proc`` files say 0), is held
    to the limit by what is read, not by what its size said."""
    status = "/proc/self/status"
    assert os.stat(status).st_size == 0 and len(open(status, "rb").read()) > 64
    with pytest.raises(ConfigError, match=r"status grew past the limit of 64 bytes while it was read"):
        FilePart.from_path(status, max_bytes=64)
    assert FilePart.from_path(status).data.startswith(b"Name:")


def test_a_limit_below_zero_is_a_config_error(tmp_path):
    path = tmp_path / "a.png"
    path.write_bytes(PNG)
    with pytest.raises(ConfigError, match="max_bytes must be a whole number of at least 0"):
        ImagePart.from_path(path, max_bytes=-1)


@FIXTURE_SETTINGS
@given(tail=st.binary(max_size=64), max_bytes=st.integers(0, 200))
def test_a_data_url_over_the_limit_is_refused_before_it_is_decoded(tail, max_bytes):
    data = PNG + tail
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    if len(data) <= max_bytes:
        assert ImagePart.from_url(url, max_bytes=max_bytes).data == data
    else:
        with pytest.raises(ConfigError, match=rf"a data: URL image of {len(data):,} bytes is over the limit of {max_bytes:,} bytes"):
            ImagePart.from_url(url, max_bytes=max_bytes)


def test_a_data_url_over_the_default_limit_is_refused():
    url = "data:image/png;base64," + "A" * (MAX_PART_BYTES // 3 * 4 + 4)
    with pytest.raises(ConfigError, match=rf"over the limit of {MAX_PART_BYTES:,} bytes"):
        ImagePart.from_url(url)
