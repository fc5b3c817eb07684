"""The backoff itself: full jitter under a doubling ceiling, attempts, deadline, cancellable waits."""

from __future__ import annotations

import asyncio
import itertools

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel
from bandoneon_retry import Backoff


def server_errors(count: int) -> list[bandoneon.ServerError]:
    return [bandoneon.ServerError(f"HTTP 503 #{n}", status=503) for n in range(1, count + 1)]


def delays_of(backoff: Backoff, failures: int) -> list[float]:
    model = ScriptedModel(*server_errors(failures), "ok")
    agent = bandoneon.Agent(model, plugins=[backoff], context_files=False)
    seen = []
    agent.on("provider_retry", lambda event: seen.append(event.delay))
    agent.run_sync("hi")
    return seen


def test_the_ceiling_doubles_each_attempt_up_to_max_delay():
    backoff = Backoff(base_delay=0.001, max_delay=0.003, max_attempts=10)
    backoff.random = lambda: 1.0
    assert delays_of(backoff, 4) == [0.001, 0.002, 0.003, 0.003]


def test_the_wait_is_drawn_uniformly_under_the_ceiling():
    backoff = Backoff(base_delay=0.004, max_delay=1.0)
    values = iter([0.5, 0.25, 0.0])
    backoff.random = lambda: next(values)
    assert delays_of(backoff, 3) == [0.002, 0.002, 0.0]


def test_a_seed_makes_the_jitter_reproducible():
    first, second = delays_of(Backoff(base_delay=0.001, seed=7), 3), delays_of(Backoff(base_delay=0.001, seed=7), 3)
    assert first == second and len(set(first)) == 3


def test_max_attempts_counts_the_first_call_and_raises_the_last_error():
    model = ScriptedModel(*server_errors(3), "never")
    agent = bandoneon.Agent(model, plugins=[Backoff(base_delay=0.001, max_attempts=3)], context_files=False)
    with pytest.raises(bandoneon.ServerError, match="#3"):
        agent.run_sync("hi")
    assert len(model.requests) == 3


def test_max_attempts_of_one_means_no_retry():
    model = ScriptedModel(*server_errors(1), "never")
    with pytest.raises(bandoneon.ServerError):
        bandoneon.Agent(model, plugins=[Backoff(max_attempts=1)], context_files=False).run_sync("hi")


def test_no_attempt_starts_after_the_deadline():
    backoff = Backoff(base_delay=1.0, max_delay=1.0, max_attempts=100, deadline=25)
    backoff.random = lambda: 0.0
    ticks = itertools.count(0, 10)  # every failure is seen 10 s after the previous one
    backoff.clock = lambda: float(next(ticks))
    model = ScriptedModel(*server_errors(10), "never")
    agent = bandoneon.Agent(model, plugins=[backoff], context_files=False)
    with pytest.raises(bandoneon.ServerError, match="#4"):
        agent.run_sync("hi")
    assert len(model.requests) == 4  # failures at t=0, 10, 20; the one at t=30 is past 25 s


def test_the_deadline_counts_from_the_first_failure_of_each_model_call():
    backoff = Backoff(base_delay=0.001, max_attempts=100, deadline=25)
    backoff.random = lambda: 0.0
    ticks = itertools.count(0, 10)
    backoff.clock = lambda: float(next(ticks))
    errors = server_errors(6)
    model = ScriptedModel(errors[0], errors[1], "first run", errors[2], errors[3], "second run")
    agent = bandoneon.Agent(model, plugins=[backoff], context_files=False)
    assert agent.run_sync("one").text == "first run"
    assert agent.run_sync("two").text == "second run"


@pytest.mark.parametrize("error", [bandoneon.BadRequest("HTTP 400"), bandoneon.AuthError("HTTP 401"), bandoneon.BadResponse("not JSON"), bandoneon.StreamInterrupted("cut")])
def test_errors_that_are_not_retryable_are_raised_at_once(error):
    model = ScriptedModel(error, "never")
    with pytest.raises(type(error)):
        bandoneon.Agent(model, plugins=[Backoff(base_delay=0.001)], context_files=False).run_sync("hi")
    assert len(model.requests) == 1


async def test_the_wait_is_cancellable():
    backoff = Backoff(base_delay=600, max_delay=600, deadline=None)
    backoff.random = lambda: 1.0
    model = ScriptedModel(*server_errors(1), "never")
    agent = bandoneon.Agent(model, plugins=[backoff], context_files=False)
    agent.on("provider_retry", lambda event: agent.cancel())
    result = await asyncio.wait_for(agent.run("hi"), timeout=10)
    assert result.stop == "cancelled"
    assert len(model.requests) == 1


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"max_attempts": 0}, "max_attempts"),
        ({"base_delay": -1}, "base_delay"),
        ({"base_delay": 2, "max_delay": 1}, "max_delay"),
        ({"deadline": 0}, "deadline"),
        ({"deadline": -3}, "deadline"),
    ],
)
def test_bad_options_are_config_errors(options, named):
    with pytest.raises(bandoneon.ConfigError, match=named):
        Backoff(**options)


def test_bad_options_by_name_are_config_errors_naming_the_plugin():
    with pytest.raises(bandoneon.ConfigError, match="retry"):
        bandoneon.Agent(ScriptedModel(), plugins={"retry": {"max_attempts": 0}}, context_files=False)
    with pytest.raises(bandoneon.ConfigError, match="max_atempts") as error:
        bandoneon.Agent(ScriptedModel(), plugins={"retry": {"max_atempts": 3}}, context_files=False)
    # the options only: not the jitter source and clock the plugin sets itself
    assert "(allowed: max_attempts, base_delay, max_delay, deadline, seed, fallback)" in str(error.value)


def test_unused_hooks_follow_the_options_when_an_agent_is_built():
    backoff = Backoff()
    assert backoff.unused_hooks == {"agent_created"}
    backoff.fallback = ("ollama:small",)
    assert backoff.unused_hooks == frozenset()


def test_the_plugin_is_discovered_through_its_entry_point():
    assert bandoneon.load_plugin("retry") is Backoff


def test_a_wait_that_would_end_past_the_deadline_is_not_started():
    backoff = Backoff(base_delay=600, max_delay=600, deadline=120)
    backoff.random = lambda: 1.0
    model = ScriptedModel(*server_errors(1), "never")
    with pytest.raises(bandoneon.ServerError):
        bandoneon.Agent(model, plugins=[backoff], context_files=False).run_sync("hi")
    assert len(model.requests) == 1
