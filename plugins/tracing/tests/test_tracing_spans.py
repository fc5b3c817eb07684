"""The span tree a run produces: shape, tokens, cost, errors, retries, subagents, redaction."""

import asyncio
import logging
import os
from typing import ClassVar

import attrs
import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call, reply
from bandoneon_tracing import Price, PriceTable, Tracing, cost_of
from bandoneon_tracing.spans import new_id


@bandoneon.tool
def putt(meters: int) -> str:
    """Putt the ball.

    Args:
        meters: distance to the hole
    """
    return "in the hole"


@bandoneon.tool
def drive(meters: int) -> str:
    """Drive the ball.

    Args:
        meters: how far
    """
    raise bandoneon.ToolError("the ball is in the water")


@attrs.define
class NameGuard(bandoneon.Plugin):
    """A stand-in for bandoneon-guard: masks one name in whatever stores keep."""

    name: ClassVar[str] = "guard"

    @bandoneon.hookimpl
    def redact_text(self, text: str) -> str:
        return text.replace("Astor", "[NAME]")


def traced(model, *, tools=(putt,), plugins=(), **options):
    tracing = Tracing(**options)
    agent = bandoneon.Agent(model, tools=list(tools), plugins=[tracing, *plugins], context_files=False)
    return agent, tracing


def by_kind(spans, kind):
    return [s for s in spans if s.kind == kind]


def test_a_run_is_a_tree_of_run_turn_model_and_tool_spans():
    agent, tracing = traced(ScriptedModel(call("putt", meters=3), "Holed out in 1"))
    agent.run_sync("Hole 1")
    spans = tracing.memory.last
    (run,) = by_kind(spans, "run")
    turns = by_kind(spans, "turn")
    models = by_kind(spans, "model")
    (tool,) = by_kind(spans, "tool")
    assert run.parent_id is None
    assert [t.parent_id for t in turns] == [run.span_id, run.span_id]
    assert [m.parent_id for m in models] == [turns[0].span_id, turns[1].span_id]
    assert tool.parent_id == turns[0].span_id
    assert tool.name == "execute_tool putt" and tool.attributes["gen_ai.tool.name"] == "putt"
    assert {s.trace_id for s in spans} == {run.trace_id}
    assert all(s.end is not None and s.end >= s.start for s in spans)
    assert run.attributes["bandoneon.stop_reason"] == "end_turn"


def test_model_spans_carry_model_tokens_and_cost_without_counting_cached_tokens_twice():
    usage = bandoneon.Usage(input_tokens=1000, output_tokens=100, cached_input_tokens=800, requests=1)
    model = ScriptedModel(reply("Holed out", usage=usage), model="caddie-1")
    agent, tracing = traced(model, prices={"caddie-*": {"input": 10.0, "output": 20.0, "cached_input": 1.0}})
    agent.run_sync("Hole 1")
    (span,) = by_kind(tracing.memory.last, "model")
    assert span.attributes["gen_ai.request.model"] == "caddie-1"
    assert span.attributes["gen_ai.usage.input_tokens"] == 1000
    assert span.attributes["gen_ai.usage.output_tokens"] == 100
    assert span.attributes["gen_ai.usage.cache_read.input_tokens"] == 800
    # 200 uncached at 10, 800 cached at 1, 100 out at 20 — per million.
    assert span.attributes["bandoneon.cost"] == pytest.approx((200 * 10 + 800 * 1 + 100 * 20) / 1e6)
    (run,) = by_kind(tracing.memory.last, "run")
    assert run.attributes["bandoneon.cost"] == pytest.approx(span.attributes["bandoneon.cost"])


def test_an_unpriced_model_has_no_cost_rather_than_zero():
    agent, tracing = traced(ScriptedModel(reply("ok", usage=bandoneon.Usage(10, 5, requests=1))))
    agent.run_sync("Hole 1")
    (span,) = by_kind(tracing.memory.last, "model")
    assert "bandoneon.cost" not in span.attributes


def test_cost_of_prices_cache_writes_and_reads_inside_the_input_count():
    price = Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    usage = bandoneon.Usage(input_tokens=1_000_000, output_tokens=0, cached_input_tokens=500_000, cache_write_tokens=250_000)
    assert cost_of(price, usage) == pytest.approx(0.25 * 3.0 + 0.5 * 0.3 + 0.25 * 3.75)


def test_the_longest_price_prefix_wins_and_a_provider_cost_is_kept():
    table = PriceTable({"gpt-4o*": {"input": 5, "output": 5}, "gpt-4o-mini*": {"input": 1, "output": 1}})
    assert table.get("gpt-4o-mini-2024").input == 1
    assert table.cost("gpt-4o-mini", bandoneon.Usage(10, 10, cost=0.5)) == 0.5


def test_a_price_with_an_unknown_key_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="unknown key.*inptu"):
        Tracing(prices={"m": {"inptu": 1.0, "output": 2.0}})


def test_a_tool_error_marks_its_span_as_an_error():
    agent, tracing = traced(ScriptedModel(call("drive", meters=200), "Ball lost"), tools=[drive])
    agent.run_sync("Hole 3")
    (tool,) = by_kind(tracing.memory.last, "tool")
    assert tool.status == "error" and "water" in tool.error


def test_a_refused_tool_and_an_unknown_tool_get_error_spans():
    @attrs.define
    class NoDriver(bandoneon.Plugin):
        name: ClassVar[str] = "no_driver"

        @bandoneon.hookimpl
        def before_tool_execution(self, call):
            return bandoneon.Refuse("no driver on this hole") if call.name == "drive" else None

    model = ScriptedModel([call("drive", meters=200), call("wedge", meters=10)], "done")
    agent, tracing = traced(model, tools=[drive], plugins=[NoDriver()])
    agent.run_sync("Hole 3")
    tools = {s.attributes["gen_ai.tool.name"]: s for s in by_kind(tracing.memory.last, "tool")}
    assert tools["drive"].status == "error" and tools["drive"].attributes["bandoneon.tool.refused"] is True
    assert "no driver" in tools["drive"].error
    assert tools["wedge"].status == "error" and "no tool named" in tools["wedge"].error


def test_a_call_a_hook_answers_without_running_gets_an_instant_span():
    @attrs.define
    class Caddie(bandoneon.Plugin):
        name: ClassVar[str] = "caddie"

        @bandoneon.hookimpl
        def before_tool_execution(self, call):
            return bandoneon.Respond("the caddie says: 3 meters") if call.name == "putt" else None

    agent, tracing = traced(ScriptedModel(call("putt", meters=3), "Holed out"), plugins=[Caddie()])
    agent.run_sync("Hole 1")
    (turn, _) = by_kind(tracing.memory.last, "turn")
    (tool,) = by_kind(tracing.memory.last, "tool")
    assert tool.status == "ok" and tool.parent_id == turn.span_id and tool.duration == 0
    assert tool.attributes["bandoneon.tool.arguments"] == '{"meters": 3}'


@attrs.define
class RetryOnce(bandoneon.Plugin):
    name: ClassVar[str] = "retry_once"

    @bandoneon.hookimpl
    def retry_delay(self, attempt):
        return bandoneon.Retry(0.0, 3) if attempt < 3 else None


def test_retries_are_counted_on_the_model_span():
    model = ScriptedModel(bandoneon.ServerError("503 busy"), bandoneon.ServerError("503 busy"), "ok")
    agent, tracing = traced(model, plugins=[RetryOnce()])
    assert agent.run_sync("Hole 1").text == "ok"
    (span,) = by_kind(tracing.memory.last, "model")
    assert span.attributes["bandoneon.retries"] == 2
    assert [e.name for e in span.events] == ["retry", "attempt", "retry", "attempt"]
    assert span.status == "ok"


def test_a_run_that_raises_is_exported_with_error_spans():
    agent, tracing = traced(ScriptedModel(bandoneon.AuthError("401 bad key")))
    with pytest.raises(bandoneon.AuthError):
        agent.run_sync("Hole 1")
    spans = tracing.memory.last
    (run,) = by_kind(spans, "run")
    (model,) = by_kind(spans, "model")
    assert run.status == "error" and "401" in run.error
    assert model.status == "error" and model.end is not None


def test_a_subagent_run_nests_under_the_tool_call_that_started_it():
    child_tracing = Tracing()

    @bandoneon.tool
    async def ask_caddie(question: str, run: bandoneon.RunContext) -> str:
        """Ask the caddie.

        Args:
            question: what to ask
        """
        child = bandoneon.Agent(ScriptedModel(f"use an iron for {question}"), plugins=[child_tracing], context_files=False, name="caddie")
        return (await child.run(question, parent=run)).text

    model = ScriptedModel([call("ask_caddie", question="A"), call("ask_caddie", question="B")], "Holed out")
    agent, tracing = traced(model, tools=[ask_caddie])
    agent.run_sync("Hole 3")
    spans = tracing.memory.last
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in by_kind(spans, "tool")}
    child_runs = [s for s in by_kind(spans, "run") if s.parent_id is not None]
    assert len(child_runs) == 2
    assert {r.parent_id for r in child_runs} == {t.span_id for t in tools.values()}
    assert all(r.attributes["gen_ai.agent.name"] == "caddie" for r in child_runs)
    assert {s.trace_id for s in spans} == {spans[0].trace_id}
    assert child_tracing.traces == []  # the child's spans belong to the parent's trace


def test_the_agents_store_redaction_and_our_own_rules_apply_to_span_attributes():
    model = ScriptedModel(call("putt", meters=3), "Astor holed out, card 4111-1111-1111-1111")
    agent, tracing = traced(model, plugins=[NameGuard()], redact=[r"\d{4}-\d{4}-\d{4}-\d{4}"])
    agent.run_sync("Astor plays hole 1")
    spans = tracing.memory.last
    text = repr([s.attributes for s in spans])
    assert "Astor" not in text and "4111-1111" not in text
    (run,) = by_kind(spans, "run")
    assert run.attributes["bandoneon.prompt"] == "[NAME] plays hole 1"


class AgentNameGuard(bandoneon.Plugin):
    """NameGuard with a rule that takes the agent: it cannot be kept without it."""

    name: ClassVar[str] = "agent-guard"

    @bandoneon.hookimpl
    def redact_text(self, agent: bandoneon.Agent, text: str) -> str:
        return text.replace("Astor", f"[NAME in {agent.name}]")


def test_a_redacting_agents_trace_keeps_its_rules_and_is_redacted_and_built_when_read():
    """Rules of the text alone (``agent.text_redaction``) are kept with the trace: nothing is
    drafted or redacted when the run ends; whoever reads first gets redacted spans (errors and
    events included). Tracing's own operation names are not redacted."""
    from bandoneon_tracing import Trace

    model = ScriptedModel(bandoneon.ServerError("Astor's card declined"), call("putt", meters=3), "Astor holed out")
    agent, tracing = traced(model, plugins=[NameGuard(), RetryOnce()], redact=["chat"])
    agent.run_sync("Astor plays hole 1")
    (kept,) = tracing.memory._kept
    assert isinstance(kept, Trace) and kept._spans is None and not isinstance(kept._drafts, list)  # not even drafted
    spans = list(kept)
    assert "Astor" not in repr([(s.attributes, s.error, s.events) for s in spans])
    assert "[NAME]'s card declined" in repr([s.events for s in spans])
    assert {s.attributes["gen_ai.operation.name"] for s in spans if s.kind != "turn"} == {"invoke_agent", "chat", "execute_tool"}


def test_a_rule_that_takes_the_agent_redacts_the_trace_when_the_run_ends_and_it_is_built_when_read():
    from bandoneon_tracing import Trace

    model = ScriptedModel(bandoneon.ServerError("Astor's card declined"), call("putt", meters=3), "Astor holed out")
    agent, tracing = traced(model, plugins=[AgentNameGuard(), RetryOnce()])
    agent.run_sync("Astor plays hole 1")
    (kept,) = tracing.memory._kept
    assert isinstance(kept, Trace) and kept._spans is None  # redacted, not built
    assert "Astor" not in repr([(d.attributes, d.error, d.events) for d in kept._drafts])
    spans = list(kept)
    assert "Astor" not in repr([(s.attributes, s.error, s.events) for s in spans])
    (run,) = by_kind(spans, "run")
    assert run.attributes["bandoneon.prompt"] == "[NAME in agent] plays hole 1"


def test_a_bad_redaction_regex_is_a_config_error_naming_it():
    with pytest.raises(bandoneon.ConfigError, match=r"\(unclosed"):
        Tracing(redact=["(unclosed"])


def test_capture_content_false_keeps_prompts_and_outputs_out_of_spans():
    agent, tracing = traced(ScriptedModel(call("putt", meters=3), "secret answer"), capture_content=False)
    agent.run_sync("secret prompt")
    text = repr([s.attributes for s in tracing.memory.last])
    assert "secret" not in text


def test_a_failing_exporter_is_logged_and_the_agent_is_unaffected(caplog):
    class Broken:
        def export(self, spans):
            raise OSError("disk full")

    agent, tracing = traced(ScriptedModel("ok"), exporters=[Broken()])
    with caplog.at_level(logging.WARNING, logger="bandoneon.tracing"):
        assert agent.run_sync("Hole 1").text == "ok"
    assert "disk full" in caplog.text
    assert len(tracing.traces) == 1


def test_the_plugin_is_found_by_entry_point_and_options_are_checked():
    assert bandoneon.load_plugin("tracing") is Tracing
    with pytest.raises(bandoneon.ConfigError, match="jsnol"):
        bandoneon.Agent(ScriptedModel("ok"), plugins={"tracing": {"jsnol": "x"}}, context_files=False)


async def test_concurrent_runs_of_forked_agents_get_separate_traces():
    agent, tracing = traced(ScriptedModel("a"))
    other = bandoneon.Agent(ScriptedModel("b"), plugins=[tracing], context_files=False)
    await asyncio.gather(agent.run("one"), other.run("two"))
    assert len(tracing.traces) == 2
    assert len({t[0].trace_id for t in tracing.traces}) == 2


def test_the_real_guard_plugins_redaction_rules_apply_to_spans():
    guard_module = pytest.importorskip("bandoneon_guard", reason="bandoneon-guard is not installed")
    guard = guard_module.Guard(redactions=[{"name": "card", "pattern": r"\d{4}-\d{4}-\d{4}-\d{4}"}])
    agent, tracing = traced(ScriptedModel(call("putt", meters=3), "paid with 4111-1111-1111-1111"), plugins=[guard])
    agent.run_sync("pay with 4111-1111-1111-1111")
    assert "4111-1111" not in repr([s.attributes for s in tracing.memory.last])


def test_a_trace_handed_to_an_exporter_or_kept_in_memory_shows_no_raw_text():
    """Spans are built when first read: whoever reads first, and however, sees redacted text."""

    class Keep:
        def __init__(self):
            self.traces = []

        def export(self, spans):
            self.traces.append(spans)

    kept = Keep()
    model = ScriptedModel(call("putt", meters=3), bandoneon.ServerError("Astor's card 4111-1111-1111-1111 declined"))
    agent, tracing = traced(model, plugins=[NameGuard()], redact=[r"\d{4}-\d{4}-\d{4}-\d{4}"], exporters=[kept])
    with pytest.raises(bandoneon.ServerError):
        agent.run_sync("Astor plays hole 1")
    (exported,) = kept.traces
    for text in (repr(exported), repr(tracing.traces), repr(tracing.memory.spans), repr([s.to_json() for s in exported])):
        assert "Astor" not in text and "4111-1111" not in text
    (run,) = by_kind(exported, "run")
    assert run.status == "error" and "[NAME]" in run.error and "[REDACTED]" in run.error
    assert [s.span_id for s in exported] == [s.span_id for s in tracing.memory.last]  # built once, shared


@pytest.mark.parametrize("guard", [NameGuard, AgentNameGuard])
def test_a_kept_trace_does_not_keep_a_redacting_agent_alive(guard):
    """Whether the agent's rules are kept with the trace (rules of the text alone) or applied
    when the run ends (a rule that takes the agent), the kept trace does not hold the agent."""
    import gc
    import weakref

    agent, tracing = traced(ScriptedModel("Astor holed out"), plugins=[guard()])
    agent.run_sync("Astor plays hole 1")
    gone = weakref.ref(agent)
    del agent
    gc.collect()
    assert gone() is None
    (run,) = by_kind(tracing.memory.last, "run")
    assert "Astor" not in run.attributes["bandoneon.prompt"] and run.attributes["bandoneon.prompt"].endswith("plays hole 1")


def test_an_unread_kept_trace_keeps_no_agent_alive():
    """A trace nobody read yet holds its runs' events, not the agent, its history or its provider."""
    import gc
    import weakref

    agent, tracing = traced(ScriptedModel(call("putt", meters=3), "Holed out"))
    agent.run_sync("Hole 1")
    gone, provider = weakref.ref(agent), weakref.ref(agent.provider)
    del agent
    gc.collect()
    assert gone() is None and provider() is None
    (kept,) = tracing.memory._kept
    assert kept._spans is None  # not built yet
    assert [s.kind for s in kept] == ["run", "turn", "model", "tool", "turn", "model"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_processes_forked_from_one_parent_draw_different_ids():
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child writes its ids and leaves at once, whatever happens
        try:
            os.write(write, f"{new_id()} {new_id(16)}".encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read) as pipe:
        theirs = pipe.read().split()
    ours = [new_id(), new_id(16)]
    assert len(theirs) == 2 and not set(theirs) & set(ours)
