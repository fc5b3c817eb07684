"""What a person reads when a provider is misconfigured: caught early, one line, the fix named."""

from __future__ import annotations

import asyncio

import pytest

import bandoneon
from bandoneon.providers.windows import KNOWN_WINDOWS, known_window
from bandoneon.testing import Fault, Reply


@pytest.fixture
def no_keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "BANDONEON_API_KEY", "BANDONEON_BASE_URL", "OPENAI_BASE_URL", "BANDONEON_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_openai_without_a_key_is_refused_before_any_request_naming_the_variable(no_keys):
    with pytest.raises(bandoneon.ConfigError, match="openai: no API key; set OPENAI_API_KEY"):
        bandoneon.Agent("openai:gpt-4o-mini", plugins=[], context_files=False)


def test_openai_at_another_address_may_go_without_a_key(no_keys, mock_llm):
    mock_llm.add(Reply(text="fine"))
    agent = bandoneon.Agent(f"openai:gpt-4o-mini@{mock_llm.base_url}", plugins=[], context_files=False)
    assert agent.run_sync("hi").text == "fine"


def test_a_named_key_variable_that_is_not_set_is_named(no_keys, tmp_path, monkeypatch):
    monkeypatch.delenv("ACME_LLM_KEY", raising=False)
    config = tmp_path / "bandoneon.toml"
    config.write_text('model = "openai:gpt-4o"\napi_key_env = "ACME_LLM_KEY"\n')
    with pytest.raises(bandoneon.ConfigError, match=f"{config}: api_key_env names ACME_LLM_KEY, which is not set"):
        bandoneon.Agent(config=config, plugins=[], context_files=False)


def test_a_hosted_models_window_comes_from_the_table_without_asking_the_server(no_keys, mock_llm, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    agent = bandoneon.Agent(f"openai:gpt-4o-2024-08-06@{mock_llm.base_url}", plugins=[], context_files=False)
    assert asyncio.run(agent.context_window()) == 128_000
    assert mock_llm.requests == []


def test_the_table_is_overridden_by_context_windows_in_bandoneon_toml(no_keys, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = tmp_path / "bandoneon.toml"
    config.write_text('model = "openai:gpt-4o"\n[context_windows]\n"openai:gpt-4o" = 64000\n')
    agent = bandoneon.Agent(config=config, plugins=[], context_files=False)
    assert asyncio.run(agent.context_window()) == 64_000


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('"gpt-4o" = 64000', "key 'gpt-4o' must be 'PROVIDER:MODEL'"),
        ('"openai:gpt-4o" = 10', "context_windows['openai:gpt-4o'] must be a whole number of at least 256 tokens, got 10"),
    ],
)
def test_a_bad_context_windows_entry_names_the_entry(tmp_path, table, message):
    config = tmp_path / "bandoneon.toml"
    config.write_text(f"[context_windows]\n{table}\n")
    with pytest.raises(bandoneon.ConfigError, match=f"^{config}: .*" + message.replace("[", r"\[").replace("(", r"\(")):
        bandoneon.load_config(config)


def test_the_longest_listed_prefix_wins_and_unlisted_models_stay_unknown():
    assert known_window("openai", "gpt-4o-mini") == 128_000
    assert known_window("openai", "o3-mini") == 200_000
    assert known_window("openai", "gpt-4-0613") == 8_192
    assert known_window("openai", "gpt-4.1-nano") == 1_047_576
    assert known_window("anthropic", "claude-sonnet-4-5-20250929") == 200_000
    assert known_window("openai", "gpt-4ox") is None
    assert known_window("ollama", "llama3.1") is None  # self-hosted: only the server knows
    assert all(window >= 8_192 for table in KNOWN_WINDOWS.values() for window in table.values())


def test_a_404_at_a_base_url_without_v1_suggests_v1(mock_llm):
    agent = bandoneon.Agent(f"openai-compatible:m@{mock_llm.url}", plugins=[], context_files=False)
    with pytest.raises(bandoneon.BadRequest) as caught:
        agent.run_sync("hi")
    message = str(caught.value)
    assert "HTTP 404" in message and f"try {mock_llm.url}/v1" in message
    assert agent.messages[-1].role == "user"  # the history is intact for the next try


def test_a_404_at_a_v1_url_does_not_blame_the_address(mock_llm):
    mock_llm.add(Fault(status=404))
    agent = bandoneon.Agent(f"openai-compatible:m@{mock_llm.base_url}", plugins=[], context_files=False)
    with pytest.raises(bandoneon.BadRequest) as caught:
        agent.run_sync("hi")
    assert "/v1" not in str(caught.value).partition("HTTP 404")[2]


def test_an_html_error_page_is_summarised_in_one_line(mock_llm):
    page = "<!DOCTYPE html>\n<html>\n  <head><title>502 Bad Gateway</title></head>\n<body>" + "x" * 5_000 + "</body></html>"
    mock_llm.add(*[Fault(status=502, body=page, headers={"content-type": "text/html; charset=utf-8"})] * 1)
    agent = bandoneon.Agent(f"openai-compatible:m@{mock_llm.base_url}", plugins=[], context_files=False)
    with pytest.raises(bandoneon.ServerError) as caught:
        agent.run_sync("hi")
    message = str(caught.value)
    assert "\n" not in message and len(message) < 200
    assert message.startswith("openai-compatible: HTTP 502: text/html body '<!DOCTYPE html> <html> <head><title>502 Bad Gateway")
