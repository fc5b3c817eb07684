"""Every extension hook exercised once through an agent (the loop points are in test_plugins.py)."""

from __future__ import annotations

import argparse

import bandoneon
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from bandoneon import Compacted, Retry, Stop, hookimpl
from bandoneon.cli import build_parser
from bandoneon.hooks import Hooks
from bandoneon.testing import Fault, FunctionModel, Reply, ScriptedModel, call


@bandoneon.tool
def ping() -> str:
    """Ping the server and return pong."""
    return "pong"


def agent_with(*plugins, model, **kwargs):
    return bandoneon.Agent(model, plugins=list(plugins), tools=[ping], context_files=False, **kwargs)


def test_should_stop_ends_the_run_with_its_reason_and_answer():
    class Terminal:
        @hookimpl
        def should_stop(self, turn):
            result = turn.tool_results[0]
            return Stop("terminal_tool", answer=dict(result.arguments), is_answer=True)

    result = agent_with(Terminal(), model=ScriptedModel(call("ping"))).run_sync("go")
    assert (result.stop, result.ok, result.answer) == ("terminal_tool", True, {})


def test_after_turn_sees_every_turn():
    seen = []

    class Recorder:
        @hookimpl
        def after_turn(self, turn):
            seen.append((turn.number, turn.has_tool_calls, [r.content for r in turn.tool_results]))

    agent_with(Recorder(), model=ScriptedModel(call("ping"), "done")).run_sync("go")
    assert seen == [(1, True, ["pong"]), (2, False, [])]


def test_compact_history_replaces_the_working_history_but_not_the_transcript():
    class KeepLast:
        @hookimpl
        def compact_history(self, run, request, window):
            if len(run.messages) > 3:
                return Compacted(tuple(run.messages[-1:]), 100, 10, ("dropped old turns",))

    model = ScriptedModel("a", "b", "c")
    agent = agent_with(KeepLast(), model=model, context_window=1000)
    events = []
    agent.on("compaction", events.append)
    for prompt in ("1", "2", "3"):
        agent.run_sync(prompt)
    assert [m.content for m in model.requests[2].messages] == ["3"]
    assert len(agent.transcript) == 6 and len(agent.messages) == 2
    assert events[0].tokens_before == 100 and events[0].removed == ("dropped old turns",)


async def test_compact_history_receives_the_window():
    windows = []

    class Watch:
        @hookimpl
        def compact_history(self, window):
            windows.append(window)

    await agent_with(Watch(), model=ScriptedModel("a", context_window=4096)).run("hi")
    assert windows == [4096]


def test_retry_delay_retries_a_server_error_and_emits_provider_retry(mock_llm):
    class RetryOnce:
        @hookimpl
        def retry_delay(self, error, attempt):
            return Retry(0.001, max_attempts=2) if error.retryable and attempt < 2 else None

    mock_llm.add(Fault(status=503), Reply(text="ok"))
    agent = bandoneon.Agent(f"openai-compatible:m@{mock_llm.base_url}", plugins=[RetryOnce()], context_files=False)
    retries = []
    agent.on("provider_retry", retries.append)
    assert agent.run_sync("hi").text == "ok"
    assert (retries[0].attempt, retries[0].max_attempts, retries[0].delay) == (1, 2, 0.001)
    assert "503" in retries[0].error


def test_wrap_up_gives_a_best_effort_text_and_keeps_the_limit_as_the_stop():
    class WrapUp:
        @hookimpl
        async def wrap_up(self, run, stop):
            reply = await run.call_model(bandoneon.ModelRequest(messages=tuple(run.messages), system_prompt="Give your best answer now."))
            return reply.message

    model = FunctionModel(lambda request: "best guess" if not request.tools else call("ping"))
    result = agent_with(WrapUp(), model=model, max_turns=2).run_sync("go")
    assert (result.stop, result.ok, result.text) == ("max_turns", False, "best guess")
    assert model.requests[-1].tools == ()


def test_register_tools_adds_plugin_tools_to_the_agent():
    @bandoneon.tool
    def remember(note: str) -> str:
        """Save a note for later sessions."""
        return "saved"

    class Memory:
        @hookimpl
        def register_tools(self, agent):
            return [remember]

    agent = agent_with(Memory(), model=ScriptedModel())
    assert set(agent.tools) == {"ping", "remember"}


def test_agent_created_can_refuse_to_build_an_agent():
    class Trifecta:
        @hookimpl
        def agent_created(self, agent):
            if "ping" in agent.tools:
                raise bandoneon.ConfigError("ping may not be combined with anything")

    with pytest.raises(bandoneon.ConfigError, match="ping may not"):
        agent_with(Trifecta(), model=ScriptedModel())


def test_check_tools_sees_every_tool_set_and_a_refusal_adds_nothing():
    seen = []

    class OnlyThreeTools:
        @hookimpl
        def check_tools(self, agent, tools):
            seen.append(sorted(tools))
            if len(tools) > 2:
                raise bandoneon.ConfigError("at most two tools")

    @bandoneon.tool
    def pong() -> str:
        """Answer a ping."""
        return "ping"

    @bandoneon.tool
    def echo(text: str) -> str:
        """Repeat the text."""
        return text

    model = ScriptedModel(call("pong"), "done")
    agent = agent_with(OnlyThreeTools(), model=model)
    agent.add_tool(pong)
    with pytest.raises(bandoneon.ConfigError, match="at most two"):
        agent.add_tool(echo)
    assert seen == [["ping"], ["ping", "pong"], ["echo", "ping", "pong"]]
    assert sorted(agent.tools) == ["ping", "pong"]
    assert agent.run_sync("go").ok
    assert [t.name for t in model.requests[0].tools] == ["ping", "pong"]


def test_redact_text_masks_what_stores_keep_and_chains_in_order():
    class NoPins:
        @hookimpl
        def redact_text(self, text):
            return text.replace("1234", "****")

    class NoNames:
        @hookimpl
        def redact_text(self, agent, text):
            return text.replace("Ana", "[name]") if "Ana" in text else None

    agent = agent_with(NoPins(), NoNames(), model=ScriptedModel())
    message = bandoneon.Message.assistant("Ana's PIN is 1234", [bandoneon.ToolCall("c1", "ping", '{"pin": "1234"}')])
    stored = agent.redact({"messages": [message], "note": ("Ana", 7)})
    assert stored["messages"][0].content == "[name]'s PIN is ****"
    assert stored["messages"][0].tool_calls[0].arguments == '{"pin": "****"}'
    assert stored["note"] == ("[name]", 7)
    assert message.content == "Ana's PIN is 1234"  # the original is untouched


class NoPins:
    name = "no-pins"

    @hookimpl
    def redact_text(self, text):
        return text.replace("1234", "****") if "1234" in text else None


class NoCards:
    name = "no-cards"

    @hookimpl
    def redact_text(self, text):
        return text.replace("4111", "[card]")


def test_text_redaction_is_the_agents_rules_as_a_function_that_keeps_no_agent():
    import gc
    import weakref

    agent = agent_with(NoPins(), NoCards(), model=ScriptedModel())
    redact = agent.text_redaction
    assert redact is not None
    assert redact("PIN 1234, card 4111") == agent.redact("PIN 1234, card 4111") == "PIN ****, card [card]"
    gone = weakref.ref(agent)
    del agent
    gc.collect()
    assert gone() is None and redact("PIN 1234") == "PIN ****"  # the rules outlive the agent


def test_text_redaction_is_none_when_a_rule_takes_the_agent():
    class NoNames:
        @hookimpl
        def redact_text(self, agent, text):
            return text.replace("Ana", f"[name in {agent.name}]")

    agent = agent_with(NoPins(), NoNames(), model=ScriptedModel())
    assert agent.text_redaction is None
    assert agent.redact("Ana: 1234") == "[name in agent]: ****"  # redact itself still applies every rule


def test_a_failing_or_async_redaction_rule_is_an_error_naming_its_plugin():
    class Broken:
        name = "broken"

        @hookimpl
        def redact_text(self, text):
            raise ValueError("no rules today")

    class Waits:
        name = "waits"

        @hookimpl
        def redact_text(self, text):
            async def later():
                return text

            return later()

    for plugin, error in ((Broken(), "broken.*redact_text.*no rules today"), (Waits(), "waits.*redact_text must not be async")):
        agent = agent_with(NoPins(), plugin, model=ScriptedModel())
        with pytest.raises(bandoneon.PluginError, match=error):
            agent.redact("PIN 1234")
        with pytest.raises(bandoneon.PluginError, match=error):
            agent.text_redaction("PIN 1234")


_WORDS = st.text(alphabet="abc xyz", max_size=12)
_MAYBE_PIN = st.builds(lambda before, pin, after: before + pin + after, _WORDS, st.sampled_from(["", "", "1234"]), _WORDS)


@st.composite
def _messages(draw):
    """Messages with a PIN (or not) in any of the texts a store keeps: words, tool arguments,
    thinking, text parts beside an image."""
    calls = [bandoneon.ToolCall(f"c{i}", "ping", draw(_MAYBE_PIN)) for i in range(draw(st.integers(0, 2)))]
    thinking = [bandoneon.Thinking(draw(_MAYBE_PIN)) for _ in range(draw(st.integers(0, 2)))]
    parts = [bandoneon.TextPart(draw(_MAYBE_PIN)), bandoneon.ImagePart("image/png", url="https://example.com/1234.png")] if draw(st.booleans()) else []
    return bandoneon.Message(draw(st.sampled_from(["user", "assistant"])), draw(_MAYBE_PIN), tool_calls=calls, thinking=thinking, parts=parts)


@settings(max_examples=200, deadline=None)
@given(message=_messages())
def test_redact_masks_every_text_of_a_message_and_copies_only_what_it_changed(message):
    agent = agent_with(NoPins(), model=ScriptedModel())
    texts = [message.content, *(c.arguments for c in message.tool_calls), *(t.text for t in message.thinking), *(p.text for p in message.parts if p.kind == "text")]
    stored = agent.redact(message)
    kept = [stored.content, *(c.arguments for c in stored.tool_calls), *(t.text for t in stored.thinking), *(p.text for p in stored.parts if p.kind == "text")]
    assert kept == [text.replace("1234", "****") for text in texts]
    assert [p.kind for p in stored.parts] == [p.kind for p in message.parts] and stored.parts[1:] == message.parts[1:]  # the image as it was
    if not any("1234" in text for text in texts):
        assert stored is message  # nothing to mask: no copy
    for before, after in zip(message.tool_calls, stored.tool_calls, strict=True):
        assert (after is before) == ("1234" not in before.arguments)


@pytest.mark.pack_free  # an installed pack redacts too: this test is about an agent with no rules
def test_with_no_redaction_in_force_stores_get_the_value_itself():
    plain = agent_with(model=ScriptedModel())
    message = bandoneon.Message.user("Ana's PIN is 1234")
    assert not plain.redacts and plain.redact(message) is message


def test_before_and_after_run_bracket_every_run_even_a_failing_one():
    seen = []

    class Bracket:
        @hookimpl
        def before_run(self, run):
            seen.append(("before", run.prompt))

        @hookimpl
        def after_run(self, result):
            seen.append(("after", result.stop))

    agent = agent_with(Bracket(), model=ScriptedModel("ok", RuntimeError("model crashed")))
    agent.run_sync("one")
    with pytest.raises(RuntimeError):
        agent.run_sync("two")
    assert seen == [("before", "one"), ("after", "end_turn"), ("before", "two"), ("after", "error")]


def test_on_event_sees_the_events_of_a_run():
    names = []

    class Watcher:
        @hookimpl
        def on_event(self, event):
            names.append(event.name)

    agent_with(Watcher(), model=ScriptedModel("ok")).run_sync("hi")
    assert names[0] == "run_start" and names[-1] == "run_end"


def test_system_prompt_sections_are_appended_in_order():
    class Plan:
        name = "plan"

        @hookimpl
        def system_prompt_sections(self, run):
            return f"Plan for turn {run.turn}."

    model = ScriptedModel(call("ping"), "ok")
    agent_with(Plan(), model=model, system_prompt="Base.").run_sync("go")
    assert [r.system_prompt for r in model.requests] == ["Base.\n\nPlan for turn 1.", "Base.\n\nPlan for turn 2."]


def test_register_providers_makes_a_model_string_resolve():
    class Echo:
        @staticmethod
        @hookimpl
        def register_providers(register):
            register("echo", lambda rest, **options: ScriptedModel(f"echo {rest}", model=rest))

    hooks = Hooks([Echo])
    hooks.register_providers(register=bandoneon.register_provider)
    assert bandoneon.Agent("echo:hello", plugins=[], context_files=False).run_sync("hi").text == "echo hello"


def test_register_commands_adds_a_cli_subcommand():
    class Greet:
        @staticmethod
        @hookimpl
        def register_commands(subparsers):
            parser = subparsers.add_parser("greet")
            parser.set_defaults(handler=lambda args: 7)

    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers()
    Hooks([Greet]).register_commands(subparsers=commands)
    args = parser.parse_args(["greet"])
    assert args.handler(args) == 7
    assert build_parser().prog == "bandoneon"


async def test_agent_emit_reaches_listeners_and_plugins_outside_a_run():
    seen = []

    class Watcher:
        @hookimpl
        def on_event(self, run, event):
            seen.append(("plugin", event.name, run))

    agent = agent_with(Watcher(), model=ScriptedModel())
    agent.on("turn_start", lambda event: seen.append(("listener", event.name)))
    await agent.emit(bandoneon.TurnStart("tick-1", 0))
    assert seen == [("listener", "turn_start"), ("plugin", "turn_start", None)]


def test_a_plugin_is_reached_by_its_class_typed_or_by_its_name():
    class Plan:
        name = "plan"
        plan = ("deliver #12",)

    class Other:
        pass

    agent = agent_with(Plan(), model=ScriptedModel())
    assert agent.plugin(Plan).plan == ("deliver #12",)
    assert agent.plugin("plan") is agent.plugin(Plan)
    with pytest.raises(KeyError, match="no Other plugin is active"):
        agent.plugin(Other)
    with pytest.raises(AttributeError):
        agent.plan  # plugins offer nothing on the agent itself


def test_agent_closed_lets_plugins_release_what_they_hold():
    released = []

    class Lock:
        @hookimpl
        async def agent_closed(self, agent):
            released.append(agent.name)

    agent = agent_with(Lock(), model=ScriptedModel("ok"))
    agent.run_sync("hi")
    agent.close()
    assert released == ["agent"]


def test_session_plugin_gives_chat_session_its_keeper_without_the_core_importing_a_plugin():
    class Keeper:
        def __init__(self, session_id):
            self.session_id = session_id

        @hookimpl
        def session_plugin(self, session_id, path):  # process-wide: called on the class
            return Keeper(f"{session_id}@{path}")

    from bandoneon.hooks import Hooks

    assert Hooks([Keeper], process_wide=True).session_plugin(session_id="s1", path="/kept").session_id == "s1@/kept"
    assert Hooks([], process_wide=True).session_plugin(session_id="s1", path=None) is None


def test_the_core_imports_no_plugin():
    import pathlib

    core = pathlib.Path(bandoneon.__file__).parent
    assert not [p for p in core.rglob("*.py") if "import bandoneon_" in p.read_text() or "from bandoneon_" in p.read_text()]
