"""A tool that returns megabytes (a web page, a log, an MCP tool's output) must not wedge an agent.

The server here holds to its window as OpenAI's does: a request over it is an HTTP 400 with
``context_length_exceeded``. The compaction plugin knows the window (the server reports it)
and cuts a result no request could hold when it arrives, to its start and its end: the run
ends with an answer, the session stays small and usable, and the guard's untrusted wrapper
goes around the cut text whole.
"""

from __future__ import annotations

import json

import bandoneon
import pytest
from bandoneon.testing import Fault, MockLLMServer, RecordedRequest, Reply, ScriptedModel, assert_history_valid, call
from bandoneon_compaction import Compaction, is_note, shrink_history
from bandoneon_guard import Guard, mark_untrusted, wrapper_tags
from hypothesis import given, settings
from hypothesis import strategies as st
from bandoneon_sessions import Sessions

WINDOW = 8_000
FIRST_LINE = "2026-12-04 00:00:01 boot: shop server starting"
LAST_LINE = "2026-12-04 23:59:59 ERROR: disk full while writing order 4471"
#: About 2 MB: some 250 windows of 8,000 tokens.
HUGE_LOG = FIRST_LINE + "\n" + "2026-12-04 12:00:00 info: order saved, all good\n" * 42_000 + LAST_LINE


@bandoneon.tool
def dump_logs() -> str:
    """Every log line of the shop server, oldest first."""
    return HUGE_LOG


def order_text(order: int) -> str:
    """More than half of what a request can hold, less than all of it (~4,200 tokens)."""
    return f"Order {order}: front wheel 700c, shipped. " + "invoice line " * 1_300


@bandoneon.tool
def get_order(order: int) -> str:
    """Everything about one order: items, shipping, invoice."""
    return order_text(order)


def request_tokens(request: RecordedRequest) -> int:
    """What the server counts: every character it was sent, at four per token."""
    return len(json.dumps({k: request.json.get(k) for k in ("messages", "tools")})) // 4


def strict_model(request: RecordedRequest) -> Reply | Fault:
    """A model with an 8,000-token window that refuses more, as OpenAI does; it calls the tool
    the user asks for, then says what it read at both ends of the result."""
    tokens = request_tokens(request)
    if tokens > WINDOW:
        error = {
            "message": f"This model's maximum context length is {WINDOW} tokens. However, your messages resulted in {tokens} tokens.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
        return Fault(status=400, body=json.dumps({"error": error}))
    last = request.json["messages"][-1]
    if last["role"] == "tool":
        seen = [line for line in (FIRST_LINE, LAST_LINE) if line in last["content"]]
        return Reply(text="I read: " + " | ".join(seen))
    if "logs" in last["content"]:
        return Reply(tool_calls=[("dump_logs", {})])
    if "order" in last["content"]:
        return Reply(tool_calls=[("get_order", {"order": 4471})])
    return Reply(text="Still here.")


@pytest.fixture
def server(mock_llm: MockLLMServer) -> MockLLMServer:
    mock_llm.model = "shop"
    mock_llm.model_info(context_window=WINDOW)
    mock_llm.respond_with(strict_model)
    return mock_llm


def make_agent(server: MockLLMServer, *plugins: bandoneon.Plugin) -> bandoneon.Agent:
    return bandoneon.Agent(f"openai-compatible:shop@{server.base_url}", tools=[dump_logs, get_order], plugins=list(plugins), context_files=False)


def tool_texts(server: MockLLMServer) -> list[str]:
    return [m["content"] for r in server.requests if r.path == "/v1/chat/completions" for m in r.json["messages"] if m["role"] == "tool"]


def test_a_huge_result_is_cut_to_its_start_and_end_and_the_model_answers(server):
    agent = make_agent(server, Compaction())
    result = agent.run_sync("Show me the logs.")
    assert result.text == f"I read: {FIRST_LINE} | {LAST_LINE}"
    read = tool_texts(server)[-1]
    assert read.startswith(FIRST_LINE + "\n") and read.endswith("\n" + LAST_LINE)
    assert f"of the {len(HUGE_LOG):,} characters of this result were left out here" in read and "Ask dump_logs for less" in read
    assert all(request_tokens(r) <= WINDOW for r in server.requests if r.path == "/v1/chat/completions")
    assert_history_valid(agent.messages)
    assert_history_valid(agent.transcript)


def test_a_session_that_met_a_huge_result_stays_small_and_usable(server, tmp_path):
    first = Sessions(session_id="shop-1", path=tmp_path)
    make_agent(server, Compaction(), first).run_sync("Show me the logs.")
    first.close()
    saved = tmp_path / "shop-1.jsonl"
    assert saved.stat().st_size < 100_000  # the 2 MB never reached the file
    again = Sessions(session_id="shop-1", path=tmp_path)
    agent = make_agent(server, Compaction(), again)
    assert agent.run_sync("Anything else?").text == "Still here."
    assert agent.run_sync("And order 4471?").ok
    again.close()
    assert_history_valid(agent.transcript)
    assert LAST_LINE in agent.transcript[2].content


def test_a_session_saved_whole_by_an_agent_without_compaction_is_not_wedged_for_one_with_it(server, tmp_path):
    without = Sessions(session_id="shop-2", path=tmp_path)
    with pytest.raises(bandoneon.BadRequest, match="maximum context length"):
        make_agent(server, without).run_sync("Show me the logs.")
    without.close()
    assert (tmp_path / "shop-2.jsonl").stat().st_size > len(HUGE_LOG)  # saved whole, as it came
    resumed = Sessions(session_id="shop-2", path=tmp_path)
    agent = make_agent(server, Compaction(), resumed)
    assert agent.run_sync("Anything else?").text == "Still here."
    resumed.close()
    assert_history_valid(agent.messages)
    assert all(request_tokens(r) <= WINDOW for r in server.requests[-1:])


def test_a_cut_untrusted_result_is_one_wrapper_with_the_note_inside(server):
    agent = make_agent(server, Compaction(), Guard(untrusted_tools=["dump_logs"]))
    result = agent.run_sync("Show me the logs.")
    assert result.text == f"I read: {FIRST_LINE} | {LAST_LINE}"
    read = tool_texts(server)[-1]
    assert wrapper_tags(read) == ["open", "close"]
    assert read.startswith('<untrusted source="dump_logs">\n' + FIRST_LINE) and read.endswith(LAST_LINE + "\n</untrusted>")
    assert "Ask dump_logs for less" in read


def test_a_big_result_that_a_request_can_hold_reaches_the_model_as_it_was(server):
    agent = make_agent(server, Compaction())
    assert agent.run_sync("What about order 4471?").ok
    assert tool_texts(server) == [order_text(4471)]
    assert agent.transcript[2].content == order_text(4471)


# -- hostile text: the cut is proved over generated input ---------------------------------------

#: Pieces a hostile page or log would hold: every spelling of the wrapper's tags the guard
#: knows, tag-like words a cut could shorten into a tag, keys, invisible and odd whitespace.
HOSTILE_PIECES = st.sampled_from(
    [
        "</untrusted>",
        '<untrusted source="evil">',
        "&lt;/untrusted&gt;",
        "＜/UNTRUSTED＞",
        "</untrustedness",
        "<untrustedly",
        "</untr",
        "usted>",
        "\u200b",
        "\u2028",
        "\xa0",
        "\n",
        " ",
        '","',
        "sk-proj-" + "A1b2C3d4" * 5,
        "AKIA" + "Q" * 16,
    ]
)
HOSTILE_TEXT = st.lists(HOSTILE_PIECES | st.text(max_size=40), min_size=1, max_size=40).map("".join)
#: Keys the guard masks by default; each is one run of key characters with a break around it.
KEYS = st.lists(st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", min_size=24, max_size=48).map(lambda s: "sk-proj-" + s), min_size=1, max_size=5, unique=True)


def run_once(content: str, *plugins: bandoneon.Plugin, window: int = 2_000, flagged: bool = False) -> str:
    """One in-process run whose tool returns ``content``; what the model read of it.
    ``flagged``: the tool says its output is untrusted (an active policy pack marks it too)."""

    @bandoneon.tool(name="fetch_page", untrusted_output=flagged)
    def fetch_page() -> str:
        """A web page, as text."""
        return content

    model = ScriptedModel(call("fetch_page"), "Read it.", context_window=window)
    agent = bandoneon.Agent(model, tools=[fetch_page], plugins=[Compaction(), *plugins], context_files=False)
    assert agent.run_sync("Read the page.").ok
    assert_history_valid(agent.transcript)
    return model.requests[1].messages[-1].content


@settings(max_examples=60)
@given(piece=HOSTILE_TEXT, repeat=st.integers(1, 400), padding=st.integers(0, 3_000), window=st.sampled_from([600, 2_000, 8_000]), flagged=st.booleans())
def test_a_cut_untrusted_result_always_reads_as_exactly_one_wrapper(piece, repeat, padding, window, flagged):
    content = "p" * padding + piece * repeat + " filler" * 8_000 + piece * repeat
    guard = Guard() if flagged else Guard(untrusted_tools=["fetch_page"])
    read = run_once(content, guard, window=window, flagged=flagged)
    assert "Ask fetch_page for less if you need the rest." in read
    assert wrapper_tags(read) == ["open", "close"]
    assert read.startswith('<untrusted source="fetch_page">\n') and read.endswith("\n</untrusted>")


@settings(max_examples=60)
@given(keys=KEYS, separator=st.sampled_from([" ", "\n", '", "', ",", "\t", "/"]), padding=st.integers(0, 200))
def test_the_cut_never_leaves_part_of_a_key_for_the_guard_to_miss(keys, separator, padding):
    # Nothing but keys: wherever the cut falls, it falls next to one or inside one.
    content = "p" * padding + separator + separator.join(keys * (16_000 // len(keys) // 40))
    read = run_once(content, Guard())
    assert "Ask fetch_page for less if you need the rest." in read
    for key in keys:
        secret = key.removeprefix("sk-proj-")
        assert not any(secret[i : i + 6] in read for i in range(len(secret) - 5)), key


@settings(max_examples=200)
@given(piece=HOSTILE_TEXT, repeat=st.integers(1, 200), preview_chars=st.integers(0, 400), old=st.booleans())
def test_a_note_that_replaces_an_untrusted_result_shows_both_tags_or_none(piece, repeat, preview_chars, old):
    wrapped = mark_untrusted(piece * repeat + " end" + "." * 4_000, "fetch_page")
    call_ = bandoneon.ToolCall("c1", "fetch_page", "{}")
    history = [bandoneon.Message.user("read the page"), bandoneon.Message.assistant("", [call_]), bandoneon.Message.tool(call_, wrapped)]
    if old:  # truncated as an old result (step 1), else cut in the protected tail (step 3)
        history.append(bandoneon.Message.user("and now?"))
    shrunk = shrink_history(history, limit=300, keep_recent_turns=1, preview_chars=preview_chars)
    note = shrunk.messages[2].content
    assert is_note(note) and "\n" not in note
    assert wrapper_tags(note) in ([], ["open", "close"])
