"""Fallback models: when a model's retries are spent on errors worth retrying, the next model
answers; 4xx never falls back; events, tracing and usage say which model answered."""

from __future__ import annotations

import json

import bandoneon
import pytest
from bandoneon import ConfigError
from bandoneon.testing import Fault, MockLLMServer, Reply


@pytest.fixture
def backup():
    with MockLLMServer() as server:
        yield server


def retry(**options):
    backoff = pytest.importorskip("bandoneon_retry").Backoff(max_attempts=2, base_delay=0, max_delay=0, **options)
    return backoff


@bandoneon.tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: 709000 people"


def test_the_next_model_answers_once_the_retries_of_the_first_are_spent(mock_llm, backup):
    mock_llm.add(Fault(status=503), Fault(status=503))
    backup.add(Reply(text="From the backup.", usage=(10, 4)))
    agent = bandoneon.Agent([f"vllm:big@{mock_llm.base_url}", f"ollama:small@{backup.base_url}"], plugins=[retry()], context_files=False)
    fallbacks, answered = [], []
    agent.on("model_fallback", fallbacks.append)
    agent.on("assistant_message", lambda e: answered.append(e.model))
    result = agent.run_sync("hi")
    assert (result.stop, result.text) == ("end_turn", "From the backup.")
    assert [(e.from_model, e.to_model) for e in fallbacks] == [("vllm:big", "ollama:small")]
    assert "HTTP 503" in fallbacks[0].error
    assert answered == ["small"]
    assert dict(result.usage_by_model) == {"ollama:small": bandoneon.Usage(10, 4, requests=1)}
    assert len(mock_llm.requests) == 2 and len(backup.requests) == 1
    mock_llm.add(Reply(text="The big one is back."))
    assert agent.run_sync("again").text == "The big one is back."  # each run starts with the first model


def test_a_4xx_is_never_a_reason_to_fall_back(mock_llm, backup):
    mock_llm.add(Fault(status=400))
    agent = bandoneon.Agent([f"vllm:big@{mock_llm.base_url}", f"ollama:small@{backup.base_url}"], plugins=[retry()], context_files=False)
    with pytest.raises(bandoneon.BadRequest, match="HTTP 400"):
        agent.run_sync("hi")
    assert backup.requests == []


def test_without_a_retry_plugin_the_first_failure_falls_back(mock_llm, backup):
    mock_llm.add(Fault(drop=True))
    backup.add(Reply(text="ok"))
    agent = bandoneon.Agent([f"vllm:big@{mock_llm.base_url}", f"ollama:small@{backup.base_url}"], plugins=[], context_files=False)
    assert agent.run_sync("hi").text == "ok"


def test_usage_is_split_by_the_model_that_spent_it(mock_llm, backup):
    mock_llm.add(Reply(tool_calls=[("lookup", {"city": "Oslo"})], usage=(20, 5)), Fault(status=529), Fault(status=529))
    backup.add(Reply(text="709000.", usage=(30, 3)))
    agent = bandoneon.Agent(f"vllm:big@{mock_llm.base_url}", tools=[lookup], plugins=[retry(fallback=[f"ollama:small@{backup.base_url}"])], context_files=False)
    result = agent.run_sync("Population of Oslo?")
    assert result.text == "709000."
    assert dict(result.usage_by_model) == {"vllm:big": bandoneon.Usage(20, 5, requests=1), "ollama:small": bandoneon.Usage(30, 3, requests=1)}
    assert result.usage == bandoneon.Usage(50, 8, requests=2)
    assert [p.model for p in agent.models] == ["big", "small"]


def test_tracing_ends_the_failed_models_span_and_names_the_fallback(mock_llm, backup, tmp_path):
    tracing = pytest.importorskip("bandoneon_tracing")
    mock_llm.add(Fault(status=503), Fault(status=503))
    backup.add(Reply(text="ok"))
    path = tmp_path / "trace.jsonl"
    agent = bandoneon.Agent(
        [f"vllm:big@{mock_llm.base_url}", f"ollama:small@{backup.base_url}"], plugins=[retry(), tracing.Tracing(jsonl=str(path))], context_files=False
    )
    agent.run_sync("hi")
    agent.close()
    spans = [json.loads(line) for line in path.read_text().splitlines()]
    chats = [s for s in spans if s["name"].startswith("chat")]
    assert [s["attributes"]["gen_ai.request.model"] for s in chats] == ["big", "small"]
    assert chats[0]["attributes"]["bandoneon.fallback_to"] == "ollama:small" and chats[0]["status"] != "ok"
    run_span = next(s for s in spans if s["name"].startswith("invoke_agent"))
    assert [e["name"] for e in run_span["events"]] == ["model_fallback"]


def test_bad_fallback_settings_fail_when_the_agent_is_made(mock_llm):
    with pytest.raises(ConfigError, match="model is an empty list"):
        bandoneon.Agent([], plugins=[], context_files=False)
    with pytest.raises(ConfigError, match="no provider registered for 'nope'"):
        bandoneon.Agent([f"vllm:big@{mock_llm.base_url}", "nope:x"], plugins=[], context_files=False)
    with pytest.raises(ConfigError, match="retry: fallback must list model strings"):
        retry(fallback=["small"])
