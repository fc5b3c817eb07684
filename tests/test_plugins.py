"""Plugin discovery through real entry points, activation, options, policy packs, hook semantics."""

from __future__ import annotations

import os
import sys

import bandoneon
import pytest
from bandoneon import Refuse, hookimpl
from bandoneon.testing import ScriptedModel, call, install_distribution

PLUGIN_SOURCE = '''
from typing import ClassVar
import attrs
import bandoneon

@attrs.define
class Shout:
    name: ClassVar[str] = "shout"
    is_default: ClassVar[bool] = {is_default}
    is_policy_pack: ClassVar[bool] = {is_policy_pack}
    word: str = "HEY"

    @bandoneon.hookimpl
    def system_prompt_sections(self, run):
        return self.word
'''


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path where tests 'install' distributions (dist-info + module), for real."""
    monkeypatch.syspath_prepend(str(tmp_path))
    installed: list[str] = []

    def install(dist: str, module: str, source: str, entry_points: dict[str, str]) -> None:
        install_distribution(tmp_path, dist, entry_points, files={f"{module}.py": source})
        installed.extend(entry_points)
        monkeypatch.setenv("BANDONEON_PLUGINS", ",".join(installed))
        bandoneon.refresh_plugins()

    yield install
    for module in [m for m in sys.modules if m.startswith("fake_")]:
        del sys.modules[module]
    monkeypatch.delenv("BANDONEON_PLUGINS")
    bandoneon.refresh_plugins()


def shout(site, *, is_default=False, is_policy_pack=False, dist="bandoneon-shout"):
    site(dist, "fake_shout", PLUGIN_SOURCE.format(is_default=is_default, is_policy_pack=is_policy_pack), {"shout": "fake_shout:Shout"})


def test_installed_plugins_are_found_without_importing_them(site):
    shout(site)
    found = bandoneon.installed_plugins()
    assert found["shout"].distribution == "bandoneon-shout" and found["shout"].version == "1.0"
    assert "fake_shout" not in sys.modules


def test_installed_is_not_active(site):
    shout(site)
    model = ScriptedModel("ok")
    bandoneon.Agent(model, context_files=False).run_sync("hi")
    assert "HEY" not in model.requests[0].system_prompt


def test_a_plugin_is_activated_by_name_with_options(site):
    shout(site)
    model = ScriptedModel("ok")
    agent = bandoneon.Agent(model, plugins={"shout": {"word": "HOLA"}}, context_files=False)
    agent.run_sync("hi")
    assert model.requests[0].system_prompt == "HOLA"
    assert agent.plugin("shout").word == "HOLA"


def test_each_agent_gets_its_own_plugin_instance(site):
    shout(site)
    one = bandoneon.Agent(ScriptedModel(), plugins=["shout"], context_files=False)
    two = bandoneon.Agent(ScriptedModel(), plugins=["shout"], context_files=False)
    assert one.plugin("shout") is not two.plugin("shout")


def test_an_option_typo_is_an_error_naming_the_key_and_the_plugin(site):
    shout(site)
    with pytest.raises(bandoneon.ConfigError, match=r"plugin 'shout'.*Unknown field 'wrod'"):
        bandoneon.Agent(ScriptedModel(), plugins={"shout": {"wrod": "x"}}, context_files=False)


def test_an_unknown_plugin_name_lists_the_installed_ones(site):
    shout(site)
    with pytest.raises(bandoneon.ConfigError, match="no plugin named 'shuot'.*shout"):
        bandoneon.Agent(ScriptedModel(), plugins=["shuot"], context_files=False)


def test_a_plugin_that_fails_to_import_is_skipped_with_a_warning(site):
    site("bandoneon-broken", "fake_broken", "raise ImportError('needs numpy 9')", {"broken": "fake_broken:Broken"})
    shout(site, is_default=True)
    with pytest.warns(bandoneon.PluginImportWarning, match="'broken'.*bandoneon-broken.*needs numpy 9"):
        agent = bandoneon.Agent(ScriptedModel(), context_files=False)
    assert [bandoneon.plugin_name(p) for p in agent.plugins] == ["shout"]


def test_recommended_defaults_are_active_without_plugins_and_absent_with_an_empty_list(site):
    shout(site, is_default=True)
    assert [bandoneon.plugin_name(p) for p in bandoneon.Agent(ScriptedModel(), context_files=False).plugins] == ["shout"]
    assert bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False).plugins == ()


def test_a_policy_pack_is_active_in_every_agent_whatever_its_code_says(site):
    shout(site, is_policy_pack=True)
    model = ScriptedModel("ok")
    bandoneon.Agent(model, plugins=[], context_files=False).run_sync("hi")
    assert model.requests[0].system_prompt == "HEY"


def test_a_policy_pack_flagged_default_too_is_active_once(site):
    shout(site, is_default=True, is_policy_pack=True)
    agent = bandoneon.Agent(ScriptedModel(), context_files=False)
    assert [bandoneon.plugin_name(p) for p in agent.plugins] == ["shout"]


def test_operators_can_disable_a_plugin(site, monkeypatch):
    shout(site, is_policy_pack=True)
    monkeypatch.setenv("BANDONEON_DISABLED_PLUGINS", "shout")
    bandoneon.refresh_plugins()
    assert "shout" not in bandoneon.installed_plugins()
    assert bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False).plugins == ()


def test_plugins_come_from_bandoneon_toml_and_a_typo_names_the_file(site, tmp_path, monkeypatch):
    shout(site)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bandoneon.toml").write_text('[plugins.shout]\nword = "TOML"\n')
    model = ScriptedModel("ok")
    bandoneon.Agent(model, context_files=False).run_sync("hi")
    assert model.requests[0].system_prompt == "TOML"
    (tmp_path / "bandoneon.toml").write_text('[plugins.shout]\nwrod = "TOML"\n')
    with pytest.raises(bandoneon.ConfigError, match=r"bandoneon.toml.*'shout'.*wrod"):
        bandoneon.Agent(ScriptedModel(), context_files=False)


# ---------------------------------------------------------------- hook semantics


def agent_with(*plugins, model=None, tools=()):
    return bandoneon.Agent(model or ScriptedModel("ok"), plugins=list(plugins), tools=list(tools), context_files=False)


@bandoneon.tool
def book_ticket(seat_class: str) -> str:
    """Book a train ticket."""
    return f"booked {seat_class}"


@pytest.mark.pack_free  # the example pack decides book_ticket first; this test is about the order of agent plugins alone
def test_async_hook_implementations_are_awaited():
    class AsyncPolicy:
        @hookimpl
        async def before_tool_execution(self, arguments):
            if arguments["seat_class"] == "first":
                return Refuse("first class needs approval")

    model = ScriptedModel(call("book_ticket", seat_class="first"), "ok")
    agent_with(AsyncPolicy(), model=model, tools=[book_ticket]).run_sync("go")
    assert model.requests[1].messages[-1].content == "first class needs approval"


@pytest.mark.pack_free  # the example pack decides book_ticket first; this test is about the order of agent plugins alone
def test_first_answer_wins_and_later_implementations_are_not_called():
    called: list[str] = []

    class Late:
        name = "late"

        @hookimpl
        def before_tool_execution(self):
            called.append("late")

    class Early:
        name = "early"

        @hookimpl(tryfirst=True)
        def before_tool_execution(self):
            called.append("early")
            return Refuse("no")

    model = ScriptedModel(call("book_ticket", seat_class="x"), "ok")
    agent_with(Late(), Early(), model=model, tools=[book_ticket]).run_sync("go")
    assert called == ["early"]


@pytest.mark.pack_free  # the example pack decides book_ticket first; this test is about the order of agent plugins alone
def test_after_tool_execution_is_chained_in_order():
    class Redact:
        name = "redact"

        @hookimpl(tryfirst=True)
        def after_tool_execution(self, result):
            return result.content.replace("first", "***")

    class Mark:
        name = "mark"

        @hookimpl
        def after_tool_execution(self, result):
            return f"<untrusted>{result.content}</untrusted>"

    model = ScriptedModel(call("book_ticket", seat_class="first"), "ok")
    agent_with(Mark(), Redact(), model=model, tools=[book_ticket]).run_sync("go")
    assert model.requests[1].messages[-1].content == "<untrusted>booked ***</untrusted>"


@pytest.mark.pack_free  # the example pack decides book_ticket first; this test is about the order of agent plugins alone
def test_tool_result_ready_sees_each_result_once_final_before_the_turn_ends():
    seen: list[tuple[str, int]] = []

    class Mark:
        @hookimpl(trylast=True)
        def after_tool_execution(self, result):
            return f"<untrusted>{result.content}</untrusted>"

    class Persist:
        @hookimpl
        def tool_result_ready(self, run, result):
            seen.append((result.content, len(run.transcript)))  # the results join the history after every call is answered

    model = ScriptedModel(call("book_ticket", seat_class="first"), "ok")
    agent = agent_with(Persist(), Mark(), model=model, tools=[book_ticket])
    agent.run_sync("go")
    assert seen == [("<untrusted>booked first</untrusted>", 2)]
    assert agent.messages[2].content == "<untrusted>booked first</untrusted>"


def test_before_provider_call_changes_one_call_not_the_history():
    class HideTools:
        @hookimpl
        def before_provider_call(self, request):
            import attrs

            return attrs.evolve(request, tools=(), system_prompt=request.system_prompt + " Today is 2026-09-25.")

    model = ScriptedModel("ok")
    agent = agent_with(HideTools(), model=model, tools=[book_ticket])
    agent.run_sync("hi")
    assert model.requests[0].tools == () and model.requests[0].system_prompt.endswith("2026-09-25.")
    assert len(agent.messages) == 2


def test_before_turn_can_stop_the_run_before_the_model_is_called():
    class Closed:
        @hookimpl
        def before_turn(self, run):
            return bandoneon.Stop("closed", "the shop is closed")

    model = ScriptedModel()
    result = agent_with(Closed(), model=model).run_sync("hi")
    assert (result.stop, result.ok, result.detail, model.requests) == ("closed", False, "the shop is closed", [])


def test_a_misspelled_hook_is_an_error_when_the_agent_is_built():
    class Typo:
        name = "typo"

        @hookimpl
        def before_tool_executoin(self, call):
            return None

    with pytest.raises(bandoneon.PluginError, match="before_tool_executoin"):
        agent_with(Typo())


def test_a_hook_with_an_unknown_argument_is_rejected_naming_the_plugin():
    class Wrong:
        name = "wrong"

        @hookimpl
        def before_turn(self, run, turn_number):
            return None

    with pytest.raises(bandoneon.PluginError, match="(?s)'wrong'.*turn_number"):
        agent_with(Wrong())


def test_the_same_plugin_twice_is_an_error():
    class Once:
        name = "once"

    with pytest.raises(bandoneon.ConfigError, match="activated twice"):
        agent_with(Once(), Once())


def test_an_on_event_observer_that_raises_is_logged_not_fatal(caplog):
    class Watcher:
        name = "watcher"

        @hookimpl
        def on_event(self, event):
            raise RuntimeError("dashboard down")

    assert agent_with(Watcher()).run_sync("hi").text == "ok"
    assert "dashboard down" in caplog.text


def test_agent_code_cannot_replace_a_policy_pack_with_a_plugin_of_the_same_name(site):
    shout(site, is_policy_pack=True)

    class Impostor:
        name = "shout"

    with pytest.raises(bandoneon.ConfigError, match="installed policy pack"):
        bandoneon.Agent(ScriptedModel(), plugins=[Impostor()], context_files=False)
    with pytest.raises(bandoneon.ConfigError, match="installed policy pack"):
        bandoneon.Agent(ScriptedModel(), plugins={"shout": {"word": "quiet"}}, context_files=False)


def test_a_pack_instance_handed_on_by_agent_code_is_the_installed_enforcement_again(site):
    """A parent's pack passed to a child (a subagent, a fork) is neither an error nor a second copy."""
    shout(site, is_policy_pack=True)
    parent = bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False)
    model = ScriptedModel("ok")
    child = bandoneon.Agent(model, plugins=list(parent.plugins), context_files=False)
    child.run_sync("hi")
    assert model.requests[0].system_prompt == "HEY"
    assert [bandoneon.plugin_name(p) for p in child.plugins] == ["shout"]
    assert child.plugin("shout") is not parent.plugin("shout")
    assert bandoneon.Agent(ScriptedModel(), plugins=["shout"], context_files=False).plugin("shout").word == "HEY"


def test_agent_code_cannot_bring_its_own_policy_pack(site):
    shout(site, is_policy_pack=True)
    installed = bandoneon.load_plugin("shout")

    class QuietSubclass(installed):
        name = "quiet"

    class OwnPack:
        name = "own"
        is_policy_pack = True

    for impostor in (QuietSubclass(word=""), OwnPack()):
        with pytest.raises(bandoneon.ConfigError, match="not installed as one"):
            bandoneon.Agent(ScriptedModel(), plugins=[impostor], context_files=False)


def test_an_installed_pack_decides_before_any_plugin_of_agent_code(site):
    site(
        "bandoneon-strict",
        "fake_strict",
        """
        import bandoneon

        class Strict:
            name = "strict"
            is_policy_pack = True

            @bandoneon.hookimpl
            def before_tool_execution(self, tool):
                return bandoneon.Refuse("the policy says no")
        """,
        {"strict": "fake_strict:Strict"},
    )

    class Eager:
        @hookimpl(tryfirst=True)
        def before_tool_execution(self, tool):
            return bandoneon.Respond("agent code says yes")

    @bandoneon.tool
    def wire_money() -> str:
        """Send money."""
        raise AssertionError("must not run")

    model = ScriptedModel(call("wire_money"), "done")
    bandoneon.Agent(model, plugins=[Eager()], tools=[wire_money], context_files=False).run_sync("go")
    assert "the policy says no" in model.requests[1].messages[-1].content


@pytest.mark.skipif(os.environ.get("BANDONEON_TEST_WITH_PACK") != "1", reason="only under tox -e packed")
def test_the_packed_environment_really_has_the_pack_in_every_agent():
    """Guards the `packed` tox env itself: its tests must not run pack-free by accident."""
    names = [bandoneon.plugin_name(p) for p in bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False).plugins]
    assert "policy-example" in names


def test_sync_and_async_observers_and_listeners_see_the_same_events_in_order():
    """A sync on_event is called on the spot (no coroutine); async ones and listeners are awaited."""

    class SyncWatcher:
        name = "sync-watcher"

        def __init__(self):
            self.seen = []

        @hookimpl
        def on_event(self, event):
            self.seen.append(event.name)

    class AsyncWatcher:
        name = "async-watcher"

        def __init__(self):
            self.seen = []

        @hookimpl
        async def on_event(self, run, event):
            self.seen.append(event.name)

    alone = SyncWatcher()
    agent_with(alone).run_sync("hi")
    sync, other = SyncWatcher(), AsyncWatcher()
    agent = agent_with(sync, other)
    heard = []
    agent.on("*", lambda event: heard.append(event.name))
    agent.run_sync("hi")
    assert sync.seen == other.seen == heard
    assert alone.seen == [name for name in heard if not name.endswith("_delta")]  # a "*" listener asks for deltas
    assert heard[0] == "run_start" and heard[-1] == "run_end"
