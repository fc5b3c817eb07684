"""The server layer of level 5, over loopback HTTP: retry what may pass, never what won't."""

from __future__ import annotations

import logging

import bandoneon
import pytest
from bandoneon.testing import Fault, MockLLMServer, Reply
from bandoneon_retry import Backoff

FAST = {"base_delay": 0.001, "max_delay": 0.01}


def http_agent(server: MockLLMServer, *, model: str | bandoneon.Provider | None = None, **options) -> bandoneon.Agent:
    plugins = [Backoff(**{**FAST, **options})]
    return bandoneon.Agent(model or "openai-compatible:mock@" + server.base_url, plugins=plugins, context_files=False)


def record(agent: bandoneon.Agent, name: str) -> list:
    seen: list = []
    agent.on(name, seen.append)
    return seen


def test_a_server_that_answers_503_twice_is_retried_and_the_model_never_sees_it(mock_llm):
    mock_llm.add(Fault(status=503), Fault(status=503), Reply(text="The door is open."))
    agent = http_agent(mock_llm)
    retries = record(agent, "provider_retry")
    result = agent.run_sync("Open the temple door.")
    assert (result.stop, result.text) == ("end_turn", "The door is open.")
    bodies = [r.json for r in mock_llm.requests]
    assert len(bodies) == 3 and bodies[0] == bodies[1] == bodies[2]  # no error text was added
    assert [(e.attempt, e.max_attempts) for e in retries] == [(1, 5), (2, 5)]
    assert all("503" in e.error and 0 <= e.delay <= 0.01 for e in retries)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 529])
def test_rate_limits_and_server_errors_are_retried(mock_llm, status):
    mock_llm.add(Fault(status=status), Reply(text="ok"))
    assert http_agent(mock_llm).run_sync("hi").text == "ok"
    assert len(mock_llm.requests) == 2


@pytest.mark.parametrize(
    ("status", "error"),
    [(400, bandoneon.BadRequest), (401, bandoneon.AuthError), (403, bandoneon.AuthError), (404, bandoneon.BadRequest), (422, bandoneon.BadRequest)],
)
def test_errors_retrying_cannot_fix_are_raised_at_once_and_the_history_stays_valid(mock_llm, status, error):
    mock_llm.add(Fault(status=status), Reply(text="second run works"))
    agent = http_agent(mock_llm)
    with pytest.raises(error):
        agent.run_sync("hi")
    assert len(mock_llm.requests) == 1
    assert agent.run_sync("again").text == "second run works"


def test_a_dropped_connection_is_retried(mock_llm):
    mock_llm.add(Fault(drop=True), Reply(text="ok"))
    assert http_agent(mock_llm).run_sync("hi").text == "ok"


def test_a_request_that_times_out_is_retried(mock_llm):
    mock_llm.add(Reply(text="too late", delay=1.0), Reply(text="in time"))
    provider = bandoneon.OpenAICompatible("mock", base_url=mock_llm.base_url, timeout=0.05)
    agent = http_agent(mock_llm, model=provider)
    retries = record(agent, "provider_retry")
    assert agent.run_sync("hi").text == "in time"
    assert "timed out" in retries[0].error


def test_a_server_that_returns_503_forever_gives_up_after_max_attempts_with_the_last_error(mock_llm):
    mock_llm.respond_with(lambda request: Fault(status=503))
    agent = http_agent(mock_llm, max_attempts=3)
    with pytest.raises(bandoneon.ServerError, match="503"):
        agent.run_sync("hi")
    assert len(mock_llm.requests) == 3
    assert [m.role for m in agent.messages] == ["user"]


def test_a_server_that_returns_503_forever_gives_up_at_the_deadline(mock_llm):
    mock_llm.respond_with(lambda request: Fault(status=503))
    agent = http_agent(mock_llm, max_attempts=1_000_000, deadline=0.05)
    with pytest.raises(bandoneon.ServerError, match="503"):
        agent.run_sync("hi")
    assert 1 <= len(mock_llm.requests) < 1_000_000


def test_retry_after_is_honoured(mock_llm):
    mock_llm.add(Fault(status=429, headers={"retry-after": "0.005"}), Reply(text="ok"))
    agent = http_agent(mock_llm)
    retries = record(agent, "provider_retry")
    agent.run_sync("hi")
    assert [e.delay for e in retries] == [0.005]


def test_retry_after_on_a_503_is_honoured_too(mock_llm):
    mock_llm.add(Fault(status=503, headers={"retry-after": "0"}), Reply(text="ok"))
    agent = http_agent(mock_llm, base_delay=5, max_delay=5)
    retries = record(agent, "provider_retry")
    agent.run_sync("hi")
    assert [e.delay for e in retries] == [0.0]


def test_a_retry_after_in_the_far_future_is_capped_and_reported(mock_llm, caplog):
    mock_llm.add(Fault(status=429, headers={"retry-after": "86400"}), Reply(text="ok"))
    agent = http_agent(mock_llm)
    retries, capped = record(agent, "provider_retry"), record(agent, "retry_after_capped")
    with caplog.at_level(logging.WARNING, logger="bandoneon_retry"):
        assert agent.run_sync("hi").text == "ok"
    assert [e.delay for e in retries] == [0.01]
    assert [(e.requested, e.used) for e in capped] == [(86400.0, 0.01)]
    assert "86400" in caplog.text and "max_delay" in caplog.text


def test_retry_is_active_by_default_and_off_with_an_empty_plugin_list(mock_llm):
    url = "openai-compatible:mock@" + mock_llm.base_url
    assert isinstance(bandoneon.Agent(url, context_files=False).plugin("retry"), Backoff)
    mock_llm.add(Fault(status=503))
    with pytest.raises(bandoneon.ServerError):
        bandoneon.Agent(url, plugins=[], context_files=False).run_sync("hi")
    assert len(mock_llm.requests) == 1


def test_retry_by_name_with_options(mock_llm):
    mock_llm.respond_with(lambda request: Fault(status=500))
    agent = bandoneon.Agent("openai-compatible:mock@" + mock_llm.base_url, plugins={"retry": {**FAST, "max_attempts": 2}}, context_files=False)
    with pytest.raises(bandoneon.ServerError):
        agent.run_sync("hi")
    assert len(mock_llm.requests) == 2
