"""Hostile ``Retry-After`` headers over loopback HTTP: whatever the header says, the failure
stays a classified, retryable error and the wait stays finite and non-negative."""

from __future__ import annotations

import math

import bandoneon
import pytest
from bandoneon.providers import parse_retry_after
from bandoneon.testing import Fault, Reply
from bandoneon_retry import Backoff
from hypothesis import given
from hypothesis import strategies as st

HOSTILE = [
    "Mon, 01 Jan 2020 00:00:00 +99999999999999999999",  # a zone offset past a C int
    "Fri, 31 Dec 9999 23:59:59 GMT",
    "Mon, 01 Jan 99999 00:00:00 GMT",
    "-5",
    "nan",
    "1e999",
    "Infinity",
]


@pytest.mark.parametrize("header", HOSTILE)
def test_a_hostile_retry_after_is_retried_within_max_delay(mock_llm, header):
    mock_llm.add(Fault(status=429, headers={"retry-after": header}), Reply(text="ok"))
    agent = bandoneon.Agent("openai-compatible:mock@" + mock_llm.base_url, plugins=[Backoff(base_delay=0.001, max_delay=0.01)], context_files=False)
    delays: list[float] = []
    agent.on("provider_retry", lambda event: delays.append(event.delay))
    assert agent.run_sync("hi").text == "ok"
    assert len(delays) == 1 and 0 <= delays[0] <= 0.01
    agent.close()


DATES = st.builds(
    "{}, {:02d} {} {} {:02d}:00:00 {}".format,
    st.sampled_from(["Mon", "Xyz"]),
    st.integers(-1, 40),
    st.sampled_from(["Jan", "Dec", "Foo"]),
    st.integers(-10**6, 10**25),
    st.integers(-1, 30),
    st.one_of(st.sampled_from(["GMT", "UTC", "-0000", "EST"]), st.integers(-10**30, 10**30).map("{:+d}".format), st.text(max_size=8)),
)


@given(st.one_of(st.text(max_size=40), DATES))
def test_parse_retry_after_never_raises_and_never_goes_negative(value):
    seconds = parse_retry_after(value)
    assert seconds is None or (seconds >= 0 and not math.isnan(seconds))
