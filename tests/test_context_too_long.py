"""A request too long for a window nobody knew must not wedge an agent or its session.

The servers here hold to an 8,000-token window without reporting it (``GET /v1/models`` says
nothing, as Ollama's OpenAI endpoint, LM Studio or a proxy): a request over it is an HTTP 400
worded as each server family words it. The loop learns the window the error names, has the
compaction plugin shrink the history to it, and asks once more; an error that names no window,
or a history still too long, ends the run once, saying to set ``context_window``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import bandoneon
import pytest
from bandoneon.testing import Fault, MockLLMServer, RecordedRequest, Reply, assert_history_valid
from bandoneon_compaction import Compaction
from bandoneon_retry import Backoff
from bandoneon_sessions import Sessions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

WINDOW = 8_000
#: About 400 KB: some fifty windows.
HUGE_LOG = "2026-12-04 12:00:00 info: order saved, all good\n" * 8_000 + "ERROR: disk full"


@bandoneon.tool
def dump_logs() -> str:
    """Every log line of the shop server, oldest first."""
    return HUGE_LOG


def request_tokens(request: RecordedRequest) -> int:
    """What the server counts: every character it was sent, at four per token."""
    return len(json.dumps(request.json)) // 4


def chats(server: MockLLMServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.method == "POST"]


def over(server: MockLLMServer) -> list[bool]:
    """For each model call so far: was it over the window?"""
    return [request_tokens(r) > WINDOW for r in chats(server)]


def fault(body: dict, status: int = 400) -> Fault:
    return Fault(status=status, body=json.dumps(body))


#: How each server family says a request is over its window (``tokens``: the request's size).
OVERFLOWS: dict[str, Callable[[int], Fault]] = {
    "openai": lambda tokens: fault(
        {
            "error": {
                "message": f"This model's maximum context length is {WINDOW} tokens. However, your messages resulted in {tokens} tokens.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    ),
    "vllm": lambda tokens: fault(
        {
            "object": "error",
            "message": f"The decoder prompt (length {tokens}) is longer than the maximum model length of {WINDOW}. Make sure that `max_model_len` is no smaller than the number of text tokens.",
            "type": "BadRequestError",
            "code": 400,
        }
    ),
    "llamacpp": lambda tokens: fault(
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": tokens,
                "n_ctx": WINDOW,
            }
        }
    ),
    "lmstudio": lambda tokens: fault(
        {
            "error": f"The number of tokens to keep from the initial prompt is greater than the context length (n_keep: {tokens}>= "
            f"n_ctx: {WINDOW}). Try to load the model with a larger context length, or provide a shorter input."
        }
    ),
    "anthropic": lambda tokens: fault({"type": "error", "error": {"type": "invalid_request_error", "message": f"prompt is too long: {tokens} tokens > {WINDOW} maximum"}}),
}


def strict(overflow: Callable[[int], Fault]) -> Callable[[RecordedRequest], Reply | Fault]:
    """A model with an unreported 8,000-token window that refuses more with ``overflow``; it
    reads the logs when asked, then says so (in the OpenAI or the Anthropic format)."""

    def respond(request: RecordedRequest) -> Reply | Fault:
        tokens = request_tokens(request)
        if tokens > WINDOW:
            return overflow(tokens)
        last = json.dumps(request.json["messages"][-1])
        if '"tool_result"' in last or '"role": "tool"' in last:
            return Reply(text="I read the logs.")
        if "logs" in last:
            return Reply(tool_calls=[("dump_logs", {})])
        return Reply(text="Still here.")

    return respond


def make_agent(server: MockLLMServer, *plugins: bandoneon.Plugin, **options) -> bandoneon.Agent:
    return bandoneon.Agent(f"openai-compatible:shop@{server.base_url}", tools=[dump_logs], plugins=list(plugins), context_files=False, **options)


def no_wait_retry() -> Backoff:
    """The retry plugin, its waits drawn as zero: a retry shows as one more request."""
    backoff = Backoff(max_attempts=3)
    backoff.random = lambda: 0.0
    return backoff


@pytest.mark.parametrize("family", ["openai", "vllm", "llamacpp", "lmstudio"])
def test_a_huge_result_is_shrunk_to_the_window_the_servers_error_names(mock_llm, tmp_path, family):
    mock_llm.respond_with(strict(OVERFLOWS[family]))
    sessions = Sessions(session_id="shop", path=tmp_path)
    agent = make_agent(mock_llm, Compaction(), no_wait_retry(), sessions)
    assert agent.run_sync("Show me the logs.").text == "I read the logs."
    assert over(mock_llm) == [False, True, False]  # one refused request, then the shrunk one
    assert asyncio.run(agent.context_window()) == WINDOW
    assert agent.run_sync("Anything else?").text == "Still here."
    assert over(mock_llm) == [False, True, False, False]  # the window is known from now on
    sessions.close()
    assert_history_valid(agent.transcript)
    resumed = Sessions(session_id="shop", path=tmp_path)
    again = make_agent(mock_llm, Compaction(), resumed)
    assert again.run_sync("Still there?").text == "Still here."
    assert over(mock_llm)[-2:] == [True, False]  # a new agent learns the window the same way
    resumed.close()
    assert_history_valid(again.messages)
    assert again.transcript[0].content == "Show me the logs."


def test_the_anthropic_provider_learns_the_window_from_prompt_is_too_long(mock_llm):
    anthropic = pytest.importorskip("bandoneon_anthropic")
    mock_llm.respond_with(strict(OVERFLOWS["anthropic"]))
    provider = anthropic.AnthropicProvider("claude-unlisted", api_key="test-key", base_url=mock_llm.base_url)
    agent = bandoneon.Agent(provider, tools=[dump_logs], plugins=[Compaction()], context_files=False)
    assert agent.run_sync("Show me the logs.").text == "I read the logs."
    assert over(mock_llm) == [False, True, False]
    assert asyncio.run(agent.context_window()) == WINDOW


def test_a_context_error_that_names_no_window_ends_the_run_once_saying_how_to_set_it(mock_llm, tmp_path):
    nameless = fault({"error": {"message": "Your request is too long for this model.", "type": "invalid_request_error", "code": "context_length_exceeded"}})
    mock_llm.respond_with(strict(lambda tokens: nameless))
    sessions = Sessions(session_id="shop", path=tmp_path)
    agent = make_agent(mock_llm, Compaction(), no_wait_retry(), sessions)
    with pytest.raises(bandoneon.ContextTooLong, match=r"window is unknown .* set context_window = TOKENS in bandoneon.toml or pass Agent\(context_window=\.\.\.\)") as raised:
        agent.run_sync("Show me the logs.")
    assert "Your request is too long for this model." in str(raised.value)
    assert over(mock_llm) == [False, True]  # never retried, never sent again
    sessions.close()
    assert_history_valid(agent.transcript)
    # Nothing was lost, and the session goes on once the window is given.
    resumed = Sessions(session_id="shop", path=tmp_path)
    again = make_agent(mock_llm, Compaction(), resumed, context_window=WINDOW)
    assert again.run_sync("Anything else?").text == "Still here."
    resumed.close()
    assert [m.role for m in again.transcript[:3]] == ["user", "assistant", "tool"]
    assert again.transcript[2].content == HUGE_LOG
    assert over(mock_llm)[-1] is False


def test_a_request_still_too_long_once_shrunk_ends_the_run_once_saying_so(mock_llm):
    mock_llm.respond_with(strict(OVERFLOWS["openai"]))
    agent = make_agent(mock_llm, Compaction())
    with pytest.raises(bandoneon.ContextTooLong, match="shrunk to the 8,000-token window the server named and still did not fit") as raised:
        agent.run_sync("Read this: " + "words " * 8_000)  # the first request is never shrunk
    assert raised.value.window == WINDOW
    assert over(mock_llm) == [True, True]
    assert_history_valid(agent.transcript)
    assert agent.transcript[0].content.startswith("Read this: ")


def test_a_configured_window_is_trusted_and_the_servers_error_ends_the_run_as_it_came(mock_llm):
    mock_llm.respond_with(strict(OVERFLOWS["openai"]))
    agent = make_agent(mock_llm, Compaction(), context_window=4 * WINDOW)  # wrong: too big
    with pytest.raises(bandoneon.ContextTooLong) as raised:
        agent.run_sync("Show me the logs.")
    assert str(raised.value) == f"openai-compatible: HTTP 400: This model's maximum context length is {WINDOW} tokens. However, your messages resulted in {request_tokens(chats(mock_llm)[-1])} tokens."
    assert over(mock_llm) == [False, True]


def test_without_compaction_the_servers_error_ends_the_run_as_it_came(mock_llm):
    mock_llm.respond_with(strict(OVERFLOWS["llamacpp"]))
    agent = make_agent(mock_llm)
    with pytest.raises(bandoneon.ContextTooLong, match="^openai-compatible: HTTP 400: the request exceeds the available context size, try increasing it$"):
        agent.run_sync("Show me the logs.")
    assert over(mock_llm) == [False, True]


def test_a_context_error_in_a_stream_is_not_retried_as_a_server_error(mock_llm):
    mock_llm.respond_with(lambda request: Fault(stream_error="exceed_context_size_error"))
    agent = make_agent(mock_llm, Compaction(), no_wait_retry())
    agent.on("text_delta", lambda event: None)
    with pytest.raises(bandoneon.ContextTooLong, match="set context_window"):
        agent.run_sync("Hello")
    assert len(chats(mock_llm)) == 1


@pytest.mark.parametrize(
    ("status", "body", "detail"),
    [
        (
            400,
            {"error": {"message": "Invalid value for 'temperature': must be at most 2.", "type": "invalid_request_error", "code": "invalid_value"}},
            ": Invalid value for 'temperature': must be at most 2.",
        ),
        (
            400,
            {"error": {"message": "max_tokens is too large: 100000. This model supports at most 16384 completion tokens.", "code": None}},
            ": max_tokens is too large: 100000. This model supports at most 16384 completion tokens.",
        ),
        (404, {"error": {"message": "model 'shop' not found", "type": "not_found_error"}}, ": model 'shop' not found"),
        (422, {"detail": "unknown field 'tools'"}, ""),
        (400, {"error": None}, ": None"),
    ],
)
def test_every_other_bad_request_is_unchanged(mock_llm, status, body, detail):
    mock_llm.respond_with(lambda request: fault(body, status))
    agent = make_agent(mock_llm, Compaction(), no_wait_retry())
    with pytest.raises(bandoneon.BadRequest) as raised:
        agent.run_sync("Hello")
    assert type(raised.value) is bandoneon.BadRequest
    assert str(raised.value) == f"openai-compatible: HTTP {status}{detail}"
    assert len(chats(mock_llm)) == 1


# -- hostile error text: whatever a server says, one clear outcome ------------------------------

#: Pieces of real overflow messages, numbers of every size, and noise around them.
PIECES = st.sampled_from(
    [
        "maximum context length is ",
        "maximum model length of ",
        "prompt is too long: 9000 tokens > ",
        "available context size (",
        "n_ctx: ",
        "context length of only ",
        "context_length_exceeded",
        " tokens",
        " maximum",
        "-1",
        "0",
        "255",
        str(WINDOW),
        "99999999999999999999",
        "٨٠٠٠",  # digits, but not ASCII ones
        "\n",
        "\u200b",
    ]
)
MESSAGES = st.lists(PIECES | st.text(max_size=20), max_size=12).map("".join)
ERRORS = st.one_of(
    MESSAGES,
    st.fixed_dictionaries(
        {"message": MESSAGES},
        optional={
            "code": st.sampled_from(["context_length_exceeded", 400, None, "invalid_value"]),
            "type": st.sampled_from(["exceed_context_size_error", "invalid_request_error", None]),
            "n_ctx": st.one_of(st.integers(), st.booleans(), st.text(max_size=5), st.none()),
        },
    ),
)


@settings(max_examples=300)
@given(error=ERRORS)
def test_any_error_text_gives_none_or_a_context_error_with_a_sane_window(error):
    found = bandoneon.context_too_long(error, "said", status=400, provider="p")
    assert found is None or (isinstance(found, bandoneon.ContextTooLong) and str(found) == "said")
    if found is not None and found.window is not None:
        assert type(found.window) is int and 0 < found.window < 10**9


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(error=ERRORS)
def test_whatever_the_overflow_error_says_the_run_ends_once_with_the_history_valid(mock_llm, error):
    mock_llm.reset()
    mock_llm.respond_with(strict(lambda tokens: fault({"error": error})))
    agent = make_agent(mock_llm, Compaction(), no_wait_retry())
    try:
        result = agent.run_sync("Show me the logs.")
    except bandoneon.BadRequest:
        pass
    else:
        assert result.text == "I read the logs."
    assert len(chats(mock_llm)) <= 3  # at most one more request after the refused one
    assert_history_valid(agent.transcript)
