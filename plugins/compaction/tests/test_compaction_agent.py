"""Compaction inside a real agent loop, driven by the testing kit's scripted model."""

from __future__ import annotations

import asyncio
import logging
import warnings

import bandoneon
import pytest
from bandoneon.testing import FunctionModel, ScriptedModel, call
from bandoneon_compaction import (
    SUMMARY_PREFIX,
    Compaction,
    WindowUnknownWarning,
    estimate_tokens,
    fixed_tokens,
    is_note,
    message_tokens,
)


@bandoneon.tool
def get_order(order: int) -> str:
    """Everything about one order: items, shipping, invoice."""
    return f"Order {order}: front wheel 700c, bent on arrival. " + "invoice line " * 300


@bandoneon.tool(rerunnable=False)
def charge_card(amount: int) -> str:
    """Charge the customer's card. Runs once: the receipt cannot be fetched again."""
    return f"Receipt R-{amount}: charged {amount} EUR. " + "card audit trail " * 100


@bandoneon.tool
def dump_logs() -> str:
    """Every log line of the shop (huge)."""
    return "log line\n" * 20_000


def make_agent(model, *, plugin=None, **kwargs) -> bandoneon.Agent:
    kwargs.setdefault("context_files", False)
    plugins = [plugin if plugin is not None else Compaction(keep_recent_turns=1)]
    return bandoneon.Agent(model, tools=[get_order, charge_card, dump_logs], plugins=plugins, **kwargs)


def request_size(request: bandoneon.ModelRequest) -> int:
    return fixed_tokens(request, estimate_tokens) + sum(message_tokens(m, estimate_tokens) for m in request.messages)


def three_order_questions(model: ScriptedModel) -> bandoneon.Agent:
    for order in (4471, 4472, 4473):
        model.add(call("get_order", order=order), f"Order {order} noted.")
    return model


def run_three(agent: bandoneon.Agent) -> None:
    for order in (4471, 4472, 4473):
        agent.run_sync(f"What is in order #{order}?")


def test_requests_shrink_once_the_history_passes_the_line():
    model = three_order_questions(ScriptedModel(context_window=2_000))
    agent = make_agent(model)
    run_three(agent)
    limit = int(2_000 * 0.8)
    assert all(request_size(r) <= limit for r in model.requests)
    last = model.requests[-1].messages
    assert [is_note(m.content) for m in last if m.role == "tool"] == [True, True, False]  # old ones became notes
    assert last[0].content == "What is in order #4471?"  # the first request stays
    assert last[-1].content.startswith("Order 4473")  # the current turn is intact


def test_the_window_can_come_from_the_agent():
    model = three_order_questions(ScriptedModel())
    agent = make_agent(model, context_window=2_000)
    run_three(agent)
    assert all(request_size(r) <= 1_600 for r in model.requests)


def test_compaction_changes_what_is_sent_not_what_happened():
    model = three_order_questions(ScriptedModel(context_window=2_000))
    agent = make_agent(model)
    run_three(agent)
    assert len(agent.transcript) == 12
    assert sum(m.content.startswith("Order 4471: front wheel") for m in agent.transcript) == 1
    assert len(agent.messages) < len(agent.transcript) or any(is_note(m.content) for m in agent.messages)
    assert tuple(agent.messages) == model.requests[-1].messages + (agent.transcript[-1],)


def test_the_compaction_event_reports_tokens_and_what_went():
    model = three_order_questions(ScriptedModel(context_window=2_000))
    agent = make_agent(model)
    events = []
    agent.on("compaction", events.append)
    run_three(agent)
    assert events
    first = events[0]
    assert first.tokens_after < first.tokens_before and first.tokens_after <= 1_600
    assert first.removed and all(isinstance(line, str) for line in first.removed)


def test_nothing_happens_while_the_history_fits():
    model = three_order_questions(ScriptedModel(context_window=100_000))
    agent = make_agent(model)
    events = []
    agent.on("compaction", events.append)
    run_three(agent)
    assert events == [] and agent.messages == agent.transcript


def test_an_unknown_window_means_no_compaction_and_one_warning():
    model = three_order_questions(ScriptedModel())
    agent = make_agent(model)
    with pytest.warns(WindowUnknownWarning, match="context window") as caught:
        run_three(agent)
    assert len([w for w in caught if issubclass(w.category, WindowUnknownWarning)]) == 1
    assert agent.messages == agent.transcript


def test_the_plugin_window_works_when_the_model_says_nothing():
    model = three_order_questions(ScriptedModel())
    agent = make_agent(model, plugin=Compaction(keep_recent_turns=1, window=2_000))
    with warnings.catch_warnings():
        warnings.simplefilter("error", WindowUnknownWarning)
        run_three(agent)
    assert all(request_size(r) <= 1_600 for r in model.requests)


def test_the_smaller_of_the_model_window_and_the_plugin_window_wins():
    assert Compaction(window=1_000).budget(8_000) == 1_000
    assert Compaction(window=50_000).budget(8_000) == 8_000
    assert Compaction().budget(None) is None


def test_the_system_prompt_and_tool_schemas_count_toward_the_size():
    model = three_order_questions(ScriptedModel(context_window=2_000))
    agent = make_agent(model, system_prompt="You help bike shop customers. " * 120)
    run_three(agent)
    assert request_size(model.requests[-1]) <= 1_600
    without_fixed = sum(message_tokens(m, estimate_tokens) for m in model.requests[-1].messages)
    assert without_fixed < 1_600 - 800  # the system prompt alone takes about 900 tokens


def test_a_receipt_that_cannot_be_fetched_again_is_never_cut():
    model = ScriptedModel(context_window=1_000)
    model.add(call("charge_card", amount=89), "Charged.")
    for order in (4471, 4472):
        model.add(call("get_order", order=order), f"Order {order} noted.")
    agent = make_agent(model)
    agent.run_sync("Charge me 89 EUR for the wheel.")
    agent.run_sync("Order #4471?")
    agent.run_sync("Order #4472?")
    receipts = [m for m in model.requests[-1].messages if m.role == "tool" and m.name == "charge_card"]
    assert len(receipts) == 1 and receipts[0].content.startswith("Receipt R-89: charged 89 EUR. card audit trail")
    assert not is_note(receipts[0].content)


def test_a_tool_result_bigger_than_the_window_is_cut_when_it_arrives_to_its_start_and_end():
    model = ScriptedModel(call("dump_logs"), "The logs are too long; I saw the start and the end.", context_window=2_000)
    agent = make_agent(model)
    result = agent.run_sync("Show me the logs.")
    assert result.ok and len(model.requests) == 2
    sent = model.requests[1].messages[-1]
    head, note, tail = sent.content.split("\n[", 1)[0], sent.content.split("\n[", 1)[1].split("]\n")[0], sent.content.split("]\n", 1)[1]
    assert head.startswith("log line\nlog line") and ("log line\n" * 20_000).endswith(tail) and len(tail) > 100
    assert note.startswith("Cut to fit the context window: ") and "of the 180,000 characters of this result were left out here" in note and "Ask dump_logs for less" in note
    assert request_size(model.requests[1]) <= 1_600
    # The megabytes never join the history: what the model read is what happened.
    assert agent.transcript[2].content == sent.content


def test_the_summary_replaces_what_was_dropped_and_is_asked_to_keep_ids():
    model = ScriptedModel(context_window=2_000)
    model.add(call("get_order", order=4471), "Order 4471: the front wheel is bent.")
    model.add("Sure, the 700c wheel is in stock.")
    model.add("Summary: order #4471, bent 700c front wheel; wheel in stock.")  # the summary call
    model.add("Return opened for order #4471.")
    agent = make_agent(model, plugin=Compaction(keep_recent_turns=1, summarize=True, summary_tokens=100))
    events = []
    agent.on("compaction", events.append)
    agent.run_sync("My order #4471 came with a bent front wheel.")
    agent.run_sync("Is the wheel in stock? " + "Please check carefully. " * 150)
    agent.run_sync("Open a return for my order. " + "Thanks a lot. " * 150)
    summary_request = model.requests[-2]
    assert summary_request.tools == ()
    assert "every id" in summary_request.messages[0].content and "Order 4471" in summary_request.messages[0].content
    final = model.requests[-1].messages
    assert final[0].content == "My order #4471 came with a bent front wheel."
    assert final[1].role == "assistant" and "order #4471, bent 700c front wheel" in final[1].content
    assert any("summarised" in line for line in events[-1].removed)


def test_a_failed_summary_call_still_drops_and_the_run_goes_on(caplog):
    model = ScriptedModel(context_window=2_000)
    model.add(call("get_order", order=4471), "Noted.", "In stock.")
    model.add(bandoneon.ServerError("503 from the summariser", status=503))
    model.add("Return opened.")
    agent = make_agent(model, plugin=Compaction(keep_recent_turns=1, summarize=True, summary_tokens=100))
    agent.run_sync("My order #4471 came with a bent front wheel.")
    agent.run_sync("Is the wheel in stock? " + "Please check carefully. " * 150)
    with caplog.at_level(logging.WARNING, logger="bandoneon_compaction"):
        result = agent.run_sync("Open a return for my order. " + "Thanks a lot. " * 150)
    assert result.ok and result.text == "Return opened."
    assert "summary call failed" in caplog.text
    assert request_size(model.requests[-1]) <= 1_600


async def test_a_summary_call_cut_by_turn_timeout_still_drops_and_the_run_goes_on(caplog):
    scripted = ScriptedModel(call("get_order", order=4471), "Noted.", "In stock.", "Return opened.")

    async def answer(request: bandoneon.ModelRequest):
        if request.system_prompt.startswith("You write faithful summaries"):
            await asyncio.sleep(60)  # a summariser that hangs: the watchdog cuts it
        return await scripted.complete(request)

    model = FunctionModel(answer, context_window=2_000)
    agent = make_agent(model, plugin=Compaction(keep_recent_turns=1, summarize=True, summary_tokens=100), turn_timeout=0.5)
    await agent.run("My order #4471 came with a bent front wheel.")
    await agent.run("Is the wheel in stock? " + "Please check carefully. " * 150)
    with caplog.at_level(logging.WARNING, logger="bandoneon_compaction"):
        result = await agent.run("Open a return for my order. " + "Thanks a lot. " * 150)
    assert (result.stop, result.text) == ("end_turn", "Return opened.")
    assert "summary call failed (it took longer than turn_timeout=0.5s)" in caplog.text
    assert request_size(model.requests[-1]) <= 1_600
    assert not any(m.content.startswith(SUMMARY_PREFIX) for m in agent.messages)


def test_a_real_tokenizer_plugs_in_as_a_callable():
    seen = []

    def count_words(text: str) -> int:
        seen.append(text)
        return len(text.split())

    model = three_order_questions(ScriptedModel(context_window=400))
    agent = make_agent(model, plugin=Compaction(keep_recent_turns=1, count_tokens=count_words))
    run_three(agent)
    assert seen
    assert any(is_note(m.content) for r in model.requests for m in r.messages)


def test_a_tokenizer_can_be_named_by_import_path():
    plugin = bandoneon.build_plugin(Compaction, {"count_tokens": "builtins:len"})
    model = three_order_questions(ScriptedModel(context_window=4_000))  # 4,000 characters, then
    agent = make_agent(model, plugin=plugin)
    run_three(agent)
    assert all(sum(len(m.content) for m in r.messages) <= 3_200 for r in model.requests)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"threshold": 1.5}, "threshold"),
        ({"threshold": 0}, "threshold"),
        ({"keep_recent_turns": 0}, "keep_recent_turns"),
        ({"window": -1}, "window"),
        ({"preview_chars": -5}, "preview_chars"),
        ({"summary_tokens": 0}, "summary_tokens"),
        ({"count_tokens": "no_such_module_xyz:count"}, "count_tokens"),
        ({"count_tokens": 3}, "count_tokens"),
    ],
)
def test_bad_options_are_a_config_error_naming_the_option(options, words):
    with pytest.raises(bandoneon.ConfigError, match=words):
        Compaction(**options)


def test_a_misspelled_option_in_plugin_config_names_the_key():
    with pytest.raises(bandoneon.ConfigError, match="keep_recent_turn"):
        bandoneon.Agent(ScriptedModel(), plugins={"compaction": {"keep_recent_turn": 2}}, context_files=False)


def test_a_bad_option_in_plugin_config_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="compaction.*threshold.*1.5"):
        bandoneon.Agent(ScriptedModel(), plugins={"compaction": {"threshold": 1.5}}, context_files=False)


def test_it_is_installed_as_a_default_plugin():
    assert "compaction" in bandoneon.installed_plugins()
    agent = bandoneon.Agent(ScriptedModel(), context_files=False)
    assert isinstance(agent.plugin("compaction"), Compaction)


async def test_a_history_made_only_of_tool_results_is_cut_not_dropped(caplog):
    agent = make_agent(ScriptedModel(context_window=1_000))
    run = agent.new_run("unused")
    orphans = tuple(bandoneon.Message.tool(bandoneon.ToolCall(f"c{n}", "get_order"), "x" * 3_000) for n in range(3))
    request = bandoneon.ModelRequest(messages=orphans)
    with caplog.at_level(logging.WARNING, logger="bandoneon_compaction"):
        compacted = await agent.plugin("compaction").compact_history(run, request, 1_000)
    assert "with no call before them" in caplog.text
    assert [m.tool_call_id for m in compacted.messages] == ["c0", "c1", "c2"]
    assert compacted.tokens_after <= 800
    # what fits is answered on the spot, without a coroutine
    assert agent.plugin("compaction").compact_history(run, bandoneon.ModelRequest(messages=compacted.messages), 1_000) is None
