"""A recorded run becomes a regression case: from a trace or a saved session, through Python and the CLI."""

import json
import sys

import bandoneon
import pytest
from bandoneon.cli import main
from bandoneon.testing import ScriptedModel, call
from bandoneon_evals import (
    Case,
    DatasetError,
    ReplayMismatch,
    add_case,
    case_from_messages,
    evaluate,
    load_dataset,
    replay_model,
    stop_reason,
    tool_errors,
)


def Tracing(**options):
    """The tracing plugin, when installed (the tox env alone-evals has only evals)."""
    return pytest.importorskip("bandoneon_tracing", reason="recording a trace needs bandoneon-tracing").Tracing(**options)


@bandoneon.tool
def weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: the city, as people write it ("Buenos Aires")
    """
    return f"{city}: 22°C, sunny"


@bandoneon.tool(name="weather")
def broken_weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: the city, as people write it ("Buenos Aires")
    """
    if " " in city:
        raise bandoneon.ToolError(f"unknown city {city.split()[0]!r}")
    return f"{city}: 22°C, sunny"


@bandoneon.tool
def units() -> str:
    """The units the answers use."""
    return "metric"


def failing_run(trace, *, capture_content=True):
    """A user's bug report: the weather tool fails on a city with a space in its name."""
    model = ScriptedModel(call("weather", city="Buenos Aires"), "Sorry, I could not get the weather for Buenos Aires.")
    agent = bandoneon.Agent(model, tools=[broken_weather, units], plugins=[Tracing(jsonl=str(trace), capture_content=capture_content)], context_files=False)
    result = agent.run_sync("What's the weather in Buenos Aires?")
    assert result.ok
    return result


def replaying(tool):
    def make_agent(case: Case) -> bandoneon.Agent:
        return bandoneon.Agent(replay_model(case), tools=[tool, units], plugins=[], context_files=False)

    return make_agent


def test_a_traced_failure_becomes_a_case_that_fails_until_the_fix(tmp_path):
    trace, dataset = tmp_path / "trace.jsonl", tmp_path / "regressions.jsonl"
    failing_run(trace)
    case = add_case(trace, dataset, expect={"tool_errors": 0}, case_id="bug-17")
    (loaded,) = load_dataset(dataset)
    assert loaded == case
    assert case.input == "What's the weather in Buenos Aires?"
    assert case.tags == ("regression",)
    assert case.metadata["tools"] == ["units", "weather"]
    assert case.metadata["outcome"]["tool_errors"] == ["weather"]
    assert case.metadata["outcome"]["stop"] == "end_turn"
    assert case.metadata["outcome"]["text"].startswith("Sorry")
    evidence = case.metadata["evidence"]
    spans = [json.loads(line) for line in trace.read_text().splitlines()]
    root = next(s for s in spans if s["kind"] == "run")
    assert evidence == {"trace": str(trace.resolve()), "trace_id": root["trace_id"], "span_id": root["span_id"]}
    first, second = case.metadata["replies"]
    assert first["message"]["tool_calls"][0]["name"] == "weather"
    assert json.loads(first["message"]["tool_calls"][0]["arguments"]) == {"city": "Buenos Aires"}

    before = evaluate(dataset, replaying(broken_weather), [tool_errors()], progress=False)
    after = evaluate(dataset, replaying(weather), [tool_errors()], progress=False)
    assert (before.pass_rate, after.pass_rate) == (0.0, 1.0)


def test_the_cli_appends_a_case_and_keeps_the_dataset_valid(tmp_path, capsys):
    trace, dataset = tmp_path / "trace.jsonl", tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"id": "old", "input": "hi", "expected": "hello"}) + "\n")
    failing_run(trace)
    code = main(["eval", "add-case", str(trace), "--to", str(dataset), "--expect", "tool_errors=0", "--expect", "stop=end_turn", "--expect", "tools=weather,units", "--id", "bug-17"])
    assert code == 0
    assert "added case 'bug-17'" in capsys.readouterr().out
    old, new = load_dataset(dataset)
    assert old.id == "old" and new.expected == {"tool_errors": 0, "stop": "end_turn", "tools": ["weather", "units"]}
    report = evaluate([new], replaying(weather), [tool_errors(), stop_reason()], progress=False)
    assert report.pass_rate == 1.0


def test_span_picks_the_run_of_that_span_and_a_bad_span_is_named(tmp_path, capsys):
    trace = tmp_path / "trace.jsonl"
    failing_run(trace)
    bandoneon.Agent(ScriptedModel("Hello."), plugins=[Tracing(jsonl=str(trace))], context_files=False).run_sync("hi")
    # Traces are written from a thread, in batches: write this process's queued ones now.
    pytest.importorskip("bandoneon_tracing").flush()
    spans = [json.loads(line) for line in trace.read_text().splitlines()]
    weather_tool = next(s for s in spans if s["kind"] == "tool")
    picked = add_case(trace, tmp_path / "a.jsonl", span=weather_tool["span_id"][:10])
    last = add_case(trace, tmp_path / "b.jsonl")
    assert picked.input.startswith("What's the weather") and last.input == "hi"
    assert main(["eval", "add-case", str(trace), "--span", "zzzz", "--to", str(tmp_path / "c.jsonl")]) == 2
    assert "no span with an id starting 'zzzz'" in capsys.readouterr().err
    assert not (tmp_path / "c.jsonl").exists()


def test_a_duplicate_id_is_refused_and_the_dataset_is_untouched(tmp_path, capsys):
    trace, dataset = tmp_path / "trace.jsonl", tmp_path / "d.jsonl"
    failing_run(trace)
    add_case(trace, dataset, case_id="bug-17")
    before = dataset.read_bytes()
    assert main(["eval", "add-case", str(trace), "--to", str(dataset), "--id", "bug-17"]) == 2
    assert "already there" in capsys.readouterr().err
    assert dataset.read_bytes() == before


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty"),
        ("{not json\n", "trace.jsonl:1: not JSON"),
        ('{"name": "x"}\n', "trace.jsonl:1: not a span"),
        ("[1, 2]\n", "got list"),
    ],
)
def test_a_file_that_is_not_a_trace_is_a_clear_error(tmp_path, capsys, content, message):
    trace, dataset = tmp_path / "trace.jsonl", tmp_path / "d.jsonl"
    trace.write_text(content)
    assert main(["eval", "add-case", str(trace), "--to", str(dataset)]) == 2
    assert message in capsys.readouterr().err
    assert not dataset.exists()


def test_a_trace_without_content_cannot_become_a_case(tmp_path):
    trace = tmp_path / "trace.jsonl"
    failing_run(trace, capture_content=False)
    with pytest.raises(DatasetError, match="capture_content=False"):
        add_case(trace, tmp_path / "d.jsonl")


def test_a_bad_expect_is_a_usage_error(tmp_path, capsys):
    trace = tmp_path / "trace.jsonl"
    failing_run(trace)
    assert main(["eval", "add-case", str(trace), "--to", str(tmp_path / "d.jsonl"), "--expect", "tool_errors"]) == 2
    assert "write KEY=VALUE" in capsys.readouterr().err


def test_a_saved_session_becomes_a_case_with_its_history(tmp_path):
    sessions = pytest.importorskip("bandoneon_sessions")
    plugin = sessions.Sessions(session_id="s1", path=str(tmp_path / "sessions"))
    model = ScriptedModel("Noted.", call("weather", city="Buenos Aires"), "It is sunny.")
    agent = bandoneon.Agent(model, tools=[weather], plugins=[plugin], context_files=False)
    agent.run_sync("I live in Buenos Aires.")
    agent.run_sync("Weather at home?")
    plugin.close()
    case = add_case(tmp_path / "sessions" / "s1.jsonl", tmp_path / "d.jsonl", expect={"contains": "sunny"})
    assert case.id == "session-s1" and case.input == "Weather at home?"
    assert [m["content"] for m in case.metadata["history"]] == ["I live in Buenos Aires.", "Noted."]
    assert len(case.metadata["replies"]) == 2 and case.metadata["outcome"]["text"] == "It is sunny."
    assert load_dataset(tmp_path / "d.jsonl") == [case]


def test_a_session_file_is_read_by_its_format_without_the_sessions_plugin(tmp_path, monkeypatch):
    """Without the sessions plugin, evals reads its file format: it needs the file, not the plugin
    (with the plugin, the session is loaded by it: test_evals_session_source.py)."""
    monkeypatch.setitem(sys.modules, "bandoneon_sessions", None)  # as if it were not installed
    records = [
        {"type": "session", "version": 1, "id": "s2", "created_at": 1.0, "forked_from": None},
        {"type": "message", "message": {"role": "user", "content": "old question"}},
        {"type": "clear"},
        {"type": "message", "message": {"role": "user", "content": "Weather?"}},
        {"type": "message", "message": {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "weather", "arguments": "{\"city\": \"Buenos Aires\"}"}]}},
        {"type": "message", "message": {"role": "tool", "content": "unknown city", "tool_call_id": "c1", "name": "weather", "is_error": True}},
        {"type": "message", "message": {"role": "assistant", "content": "Sorry."}},
    ]
    session = tmp_path / "s2.jsonl"
    session.write_text("".join(json.dumps(r) + "\n" for r in records))
    case = add_case(session, tmp_path / "d.jsonl", expect={"tool_errors": 0})
    assert (case.id, case.input, "history" in case.metadata) == ("session-s2", "Weather?", False)
    assert case.metadata["outcome"]["tool_errors"] == ["weather"] and case.metadata["evidence"] == {"session": str(session.resolve())}
    assert evaluate(tmp_path / "d.jsonl", replaying(weather), [tool_errors()], progress=False).pass_rate == 1.0
    session.write_text(session.read_text() + '{"type": "message", "message": {"role": 7}}\n')
    with pytest.raises(DatasetError, match="s2.jsonl:8: not a session record"):
        add_case(session, tmp_path / "e.jsonl")


def test_a_replay_that_needs_more_replies_than_recorded_says_so(tmp_path):
    case = case_from_messages([bandoneon.Message.user("hi"), bandoneon.Message.assistant("", [bandoneon.ToolCall("c1", "units")])], case_id="short")
    agent = bandoneon.Agent(replay_model(case), tools=[units], plugins=[], context_files=False)
    with pytest.raises(ReplayMismatch, match="reply #2; the recorded run had 1"):
        agent.run_sync(case.input)
    assert agent.messages[-1].role == "tool"  # the history stays valid


class AsksOnTheSide(bandoneon.Plugin):
    """Before each model call of the second turn, asks the model something of its own."""

    name = "asks-on-the-side"

    @bandoneon.hookimpl
    async def before_provider_call(self, run: bandoneon.RunContext, request: bandoneon.ModelRequest) -> bandoneon.ModelRequest:
        if run.turn == 2:
            await run.call_model(bandoneon.ModelRequest(messages=(bandoneon.Message.user("How windy is it?"),)))
        return request


def test_a_plugins_side_call_in_the_trace_is_not_replayed_as_a_turns_reply(tmp_path):
    trace = tmp_path / "trace.jsonl"
    model = ScriptedModel(call("weather", city="Lima"), "Calm.", "Lima: 22°C, sunny.")
    agent = bandoneon.Agent(model, tools=[weather, units], plugins=[Tracing(jsonl=str(trace)), AsksOnTheSide()], context_files=False)
    assert agent.run_sync("Weather in Lima?").text == "Lima: 22°C, sunny."
    agent.close()
    case = add_case(trace, tmp_path / "d.jsonl", expect={"tool_errors": 0})
    first, second = case.metadata["replies"]  # the turns' replies only, in order
    assert first["message"]["tool_calls"][0]["name"] == "weather" and second["message"]["content"] == "Lima: 22°C, sunny."
    assert case.metadata["outcome"]["text"] == "Lima: 22°C, sunny."
    assert evaluate([case], replaying(weather), [tool_errors()], progress=False).pass_rate == 1.0
