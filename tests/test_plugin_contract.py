"""The plugin contract as pluggy defines it: argument passing, validation of the bound instance,
wrappers, hooks published by plugins, process-wide hooks, module plugins."""

from __future__ import annotations

import sys
import types

import bandoneon
import pytest
from bandoneon import Calls, PluginError, Stop, hookimpl, hookspec
from bandoneon.testing import ScriptedModel, call


@bandoneon.tool
def ping() -> str:
    """Ping the server and return pong."""
    return "pong"


def agent_with(*plugins, model=None, **kwargs):
    return bandoneon.Agent(model or ScriptedModel(call("ping"), "done"), plugins=list(plugins), tools=[ping], context_files=False, **kwargs)


def test_a_parameter_with_a_default_receives_the_callers_value():
    seen = []

    class Defaults:
        @hookimpl
        def should_stop(self, run, turn=None):
            seen.append(turn.number if turn is not None else "default")

    agent_with(Defaults()).run_sync("go")
    assert seen == [1]


def test_a_parameter_the_spec_does_not_have_keeps_its_default():
    seen = []

    class Extra:
        @hookimpl
        def after_turn(self, turn, label="mine"):
            seen.append((turn.number, label))

    agent_with(Extra()).run_sync("go")
    assert seen == [(1, "mine"), (2, "mine")]


def shared_before_turn(self, run):
    self.calls.append(run.turn)


def test_a_plain_function_assigned_on_the_class_is_validated_on_the_instance():
    class Shared:
        before_turn = hookimpl(shared_before_turn)

        def __init__(self):
            self.calls = []

    plugin = Shared()
    agent_with(plugin).run_sync("go")
    assert plugin.calls == [1, 2]


def test_an_implementation_set_on_the_instance_is_called():
    class Empty:
        pass

    plugin = Empty()
    seen = []
    plugin.before_turn = hookimpl(lambda run: seen.append(run.turn))
    agent_with(plugin).run_sync("go")
    assert seen == [1, 2]


def test_agents_of_one_plugin_class_each_reach_their_own_instance():
    # The class's functions are worked out once and shared by every agent of the combination:
    # each call must still land on the calling agent's instance.
    class Counter:
        def __init__(self, label):
            self.label, self.turns = label, []

        @hookimpl
        def before_turn(self, run):
            self.turns.append((self.label, run.agent.name))

        @hookimpl
        def on_event(self, event):
            self.turns.append((self.label, event.name)) if event.name == "run_end" else None

    first, second = Counter("first"), Counter("second")
    agent_with(first, name="a").run_sync("go")
    agent_with(second, name="b").run_sync("go")
    assert first.turns == [("first", "a"), ("first", "a"), ("first", "run_end")]
    assert second.turns == [("second", "b"), ("second", "b"), ("second", "run_end")]


def test_a_static_method_implementation_is_called_without_an_instance():
    seen = []

    class Static:
        @staticmethod
        @hookimpl
        def after_turn(turn):
            seen.append(turn.number)

    agent_with(Static()).run_sync("go")
    agent_with(Static()).run_sync("go")
    assert seen == [1, 2, 1, 2]


def test_a_hook_wrapper_is_refused_naming_what_to_use_instead():
    class Wrapping:
        @hookimpl(wrapper=True)
        def before_turn(self, run):
            yield

    with pytest.raises(PluginError, match="wrapping.*hook wrapper.*tryfirst=True"):
        agent_with(Wrapping())


def test_an_async_implementation_of_a_sync_hook_is_refused_when_the_agent_is_built():
    class Eager:
        @hookimpl
        async def register_tools(self, agent):
            return []

    with pytest.raises(PluginError, match="eager.*register_tools must not be async"):
        agent_with(Eager())


def test_an_implementation_of_a_hook_nobody_declares_is_refused_unless_optional():
    class Typo:
        @hookimpl
        def befor_turn(self, run):
            return None

    class Optional:
        @hookimpl(optionalhook=True)
        def some_other_plugins_hook(self, run):
            return None

    with pytest.raises(PluginError, match="(?s)typo.*befor_turn"):
        agent_with(Typo())
    assert agent_with(Optional()).run_sync("go").ok


def test_process_wide_hooks_need_no_staticmethod():
    from bandoneon.hooks import Hooks

    class Echo:
        def register_providers(self, register):  # a plain method: called on the class
            register("echo-plain", lambda rest, **options: ScriptedModel(f"echo {rest}", model=rest))

    Echo.register_providers = hookimpl(Echo.register_providers)
    Hooks([Echo], process_wide=True).register_providers(register=bandoneon.register_provider)
    assert bandoneon.Agent("echo-plain:hi", plugins=[], context_files=False).run_sync("x").text == "echo hi"


def test_a_module_is_a_plugin():
    module = types.ModuleType("stopper_plugin")
    exec(
        "from bandoneon import hookimpl, Stop\n"
        "@hookimpl\n"
        "def before_turn(run):\n"
        "    return Stop('module_says_stop') if run.turn == 2 else None\n",
        module.__dict__,
    )
    agent = agent_with(module)
    assert agent.plugin("stopper_plugin") is module
    assert agent.run_sync("go").stop == "module_says_stop"


# ---------------------------------------------------------------- hooks published by a plugin


def _published_specs() -> types.ModuleType:
    specs = types.ModuleType("greeter_hookspecs")
    exec(
        "from bandoneon import hookspec, Calls\n"
        "@hookspec(Calls.COLLECTING, sync=True)\n"
        "def greetings(agent):\n"
        "    '''Names to greet.'''\n"
        "@hookspec(Calls.FIRST)\n"
        "def salutation(name):\n"
        "    '''How to greet ``name``.'''\n"
        "@hookspec(Calls.CHAINED, chains='text')\n"
        "def polish(text):\n"
        "    '''Polish the greeting.'''\n",
        specs.__dict__,
    )
    return specs


GREETER_SPECS = _published_specs()
sys.modules.setdefault("greeter_hookspecs", GREETER_SPECS)


class Greeter:
    """Publishes three hooks and calls them; it implements none of them itself."""

    hookspecs = GREETER_SPECS

    def __init__(self):
        self.said = []

    @hookimpl
    async def before_run(self, run):
        hooks = run.agent.hooks
        for name in hooks.call_sync(GREETER_SPECS.greetings, agent=run.agent):
            word = await hooks.call(GREETER_SPECS.salutation, name=name) or "hello"
            self.said.append(await hooks.call(GREETER_SPECS.polish, text=f"{word} {name}"))


class Friends:
    @hookimpl
    def greetings(self, agent):
        return "ana"

    @hookimpl
    async def salutation(self, name):
        return "hola" if name == "ana" else None

    @hookimpl
    def polish(self, text):
        return text.capitalize() + "!"


class Shouter:
    @hookimpl
    def greetings(self):
        return "bo"

    @hookimpl(tryfirst=True)
    def polish(self, text):
        return text.upper()


def test_a_plugin_publishes_hooks_that_other_plugins_implement():
    greeter = Greeter()
    agent_with(greeter, Friends(), Shouter()).run_sync("go")
    # later-registered first: Shouter's greeting comes first; its polish is tryfirst, then Friends'
    assert greeter.said == ["Hello bo!", "Hola ana!"]


def test_a_published_hook_nobody_implements_answers_like_an_empty_core_hook():
    greeter = Greeter()
    agent_with(greeter).run_sync("go")
    assert greeter.said == []


def test_implementing_a_published_hook_with_a_wrong_argument_is_refused():
    class Wrong:
        @hookimpl
        def salutation(self, person):
            return "hi"

    with pytest.raises(PluginError, match="(?s)wrong.*person"):
        agent_with(Greeter(), Wrong())


def test_calling_a_hook_nobody_declares_is_a_clear_error():
    @hookspec(Calls.FIRST)
    def unknown_hook(run):
        """Nobody publishes this."""

    agent = agent_with()
    with pytest.raises(PluginError, match="no active or installed plugin declares a hook named 'unknown_hook'"):
        agent.hooks.call_sync(unknown_hook, run=None)


def test_a_spec_without_a_calling_style_is_refused():
    with pytest.raises(ValueError, match="chains="):
        hookspec(Calls.CHAINED)
    with pytest.raises(ValueError, match="'missing' is not one of its arguments"):

        @hookspec(Calls.CHAINED, chains="missing")
        def chained(text):
            """A chained hook."""


def test_first_answer_stops_at_the_first_non_none_answer():
    calls = []

    class Quiet:
        @hookimpl
        def before_turn(self, run):
            calls.append("quiet")

    class Stopper:
        @hookimpl
        def before_turn(self, run):
            calls.append("stopper")
            return Stop("stopped")

    class Last:
        @hookimpl(trylast=True)
        def before_turn(self, run):
            calls.append("last")

    assert agent_with(Stopper(), Last(), Quiet()).run_sync("go").stop == "stopped"
    assert calls == ["quiet", "stopper"]


# ---------------------------------------------------------------- unused_hooks


class Counting(bandoneon.Plugin):
    """Counts its before_turn calls; ``quiet`` instances say they do not need that hook."""

    def __init__(self, *, quiet: bool = False, unused: object = None):
        self.turns = 0
        if quiet:
            self.unused_hooks = frozenset({"before_turn"})
        if unused is not None:
            self.unused_hooks = unused  # type: ignore[assignment]

    @hookimpl
    def before_turn(self, run):
        self.turns += 1

    @hookimpl
    def after_turn(self, run, turn):
        pass


def test_an_instance_leaves_its_unused_hooks_uncalled_and_another_of_its_class_does_not():
    quiet, loud = Counting(quiet=True), Counting()
    for plugin in (quiet, loud, Counting(quiet=True)):  # the plans of both are kept apart
        agent_with(plugin).run_sync("go")
    assert (quiet.turns, loud.turns) == (0, 2)
    assert not agent_with(Counting(quiet=True)).hooks.implements(bandoneon.hookspecs.before_turn)
    assert agent_with(Counting(quiet=True)).hooks.implements(bandoneon.hookspecs.after_turn)


@pytest.mark.parametrize(
    "unused, error",
    [
        (frozenset({"before_trun"}), "unused_hooks names 'before_trun', which it does not implement"),
        (frozenset({"should_stop"}), "unused_hooks names 'should_stop', which it does not implement"),
        ({"before_turn"}, "unused_hooks must be a frozenset of hook names"),
        (["before_turn"], "unused_hooks must be a frozenset of hook names"),
    ],
)
def test_unused_hooks_that_are_not_the_plugins_hooks_are_a_clear_error(unused, error):
    with pytest.raises(PluginError, match=error):
        agent_with(Counting(unused=unused))


# ---------------------------------------------------------------- sync and async implementations
# A hook whose implementations are all plain functions is answered without a coroutine when
# calls are unmeasured (``Hooks.now``); the answers must be the same whichever path runs.


class Tagging:
    """Adds its tag to the system prompt of every request (chained), once as a section
    (collecting), and records the order it was called in."""

    def __init__(self, tag: str, calls: list[str]):
        self.tag, self.calls = tag, calls

    def _seen(self, hook: str) -> None:
        self.calls.append(f"{self.tag}:{hook}")


def _sync_tagger(tag: str, calls: list[str]) -> Tagging:
    class SyncTag(Tagging):
        name = tag

        @hookimpl
        def before_provider_call(self, request):
            self._seen("before_provider_call")
            return bandoneon.ModelRequest(**{**_fields(request), "system_prompt": f"{request.system_prompt}+{self.tag}"})

        @hookimpl
        def system_prompt_sections(self, run):
            self._seen("system_prompt_sections")
            return f"[{self.tag}]" if run.turn == 1 else None

    return SyncTag(tag, calls)


def _async_tagger(tag: str, calls: list[str]) -> Tagging:
    class AsyncTag(Tagging):
        name = tag

        @hookimpl
        async def before_provider_call(self, request):
            self._seen("before_provider_call")
            return bandoneon.ModelRequest(**{**_fields(request), "system_prompt": f"{request.system_prompt}+{self.tag}"})

        @hookimpl
        async def system_prompt_sections(self, run):
            self._seen("system_prompt_sections")
            return f"[{self.tag}]" if run.turn == 1 else None

    return AsyncTag(tag, calls)


def _fields(request):
    import attrs

    return attrs.asdict(request, recurse=False)


@pytest.mark.parametrize("measured", [False, True], ids=["unmeasured", "measured"])
@pytest.mark.parametrize("kinds", ["ss", "sa", "as"])
def test_sync_and_async_implementations_answer_alike_in_the_same_order(kinds, measured):
    calls: list[str] = []
    makers = {"s": _sync_tagger, "a": _async_tagger}
    plugins = [makers[kind](f"{kind}{i}", calls) for i, kind in enumerate(kinds)]
    model = ScriptedModel(call("ping"), "done")
    agent = agent_with(*plugins, model=model, system_prompt="base")
    if measured:
        agent.profile_hooks()
    agent.run_sync("go")
    first, second = (f"{kind}{i}" for i, kind in enumerate(kinds))
    # later-registered first, as pluggy calls them; the chain sees the earlier answer
    assert model.requests[0].system_prompt == f"base\n\n[{second}]\n\n[{first}]+{second}+{first}"
    assert model.requests[1].system_prompt == f"base+{second}+{first}"
    assert calls[:4] == [f"{second}:system_prompt_sections", f"{first}:system_prompt_sections", f"{second}:before_provider_call", f"{first}:before_provider_call"]


@pytest.mark.parametrize("measured", [False, True], ids=["unmeasured", "measured"])
def test_a_plain_function_may_answer_a_coroutine_when_it_has_to_wait(measured):
    calls: list[str] = []

    async def waited(tag):
        calls.append(f"{tag} waited")
        return f"[{tag}]"

    class Sometimes:
        name = "sometimes"

        @hookimpl
        def system_prompt_sections(self, run):
            calls.append("sometimes")
            return waited("sometimes") if run.turn == 1 else "[sometimes, at once]"

    class After:
        name = "after"

        @hookimpl(trylast=True)
        def system_prompt_sections(self, run):
            calls.append("after")
            return "[after]"

    model = ScriptedModel(call("ping"), "done")
    agent = agent_with(After(), Sometimes(), model=model, system_prompt="base")
    if measured:
        agent.profile_hooks()
    agent.run_sync("go")
    assert [r.system_prompt for r in model.requests] == ["base\n\n[sometimes]\n\n[after]", "base\n\n[sometimes, at once]\n\n[after]"]
    assert calls == ["sometimes", "sometimes waited", "after", "sometimes", "after"]


def test_a_failure_in_a_coroutine_a_plain_function_answered_names_its_plugin():
    async def broken():
        raise ValueError("no luck")

    class Waits:
        name = "waits"

        @hookimpl
        def before_turn(self, run):
            return broken()

    with pytest.raises(PluginError, match="waits.*before_turn.*no luck"):
        agent_with(Waits()).run_sync("go")


def test_a_coroutine_from_a_plain_function_of_a_sync_hook_is_refused_naming_its_plugin():
    async def later():
        return []

    class Eager:
        name = "eager"

        @hookimpl
        def register_tools(self, agent):
            return later()

    with pytest.raises(PluginError, match="eager.*register_tools must not be async"):
        agent_with(Eager())


# ---------------------------------------------------------------- events
# Observers taking ``(run, event)`` are called straight (``Hooks.deliver``'s fast path); the
# others through ``now``. Order, isolation and waiting must be the same either way.


def _observer(tag: str, heard: list[str], *, shape: str = "run, event", fails: bool = False, waits: bool = False):
    async def waited(event):
        heard.append(f"{tag} waited {event.name}")

    def hear(event):
        heard.append(f"{tag} {event.name}")
        if fails:
            raise RuntimeError(f"{tag} is broken")
        return waited(event) if waits and event.name == "turn_start" else None

    if shape == "run, event":

        class Observer:
            name = tag

            @hookimpl
            def on_event(self, run, event):
                return hear(event)

    else:

        class Observer:  # type: ignore[no-redef]
            name = tag

            @hookimpl
            def on_event(self, event):
                return hear(event)

    return Observer()


@pytest.mark.parametrize("measured", [False, True], ids=["unmeasured", "measured"])
@pytest.mark.parametrize("shape", ["run, event", "event"])
def test_observers_hear_every_event_in_order_and_a_broken_one_is_only_logged(shape, measured, caplog):
    heard: list[str] = []
    observers = [_observer("last", heard, shape=shape), _observer("broken", heard, fails=True), _observer("first", heard)]
    agent = agent_with(*observers)
    if measured:
        agent.profile_hooks()
    assert agent.run_sync("go").text == "done"
    starts = [entry for entry in heard if entry.endswith(" run_start")]
    assert starts == ["first run_start", "broken run_start", "last run_start"]  # later-registered first
    assert sum(entry.startswith("last ") for entry in heard) == sum(entry.startswith("first ") for entry in heard) > 10
    assert "plugin 'broken' failed in on_event: RuntimeError: broken is broken" in caplog.text


@pytest.mark.parametrize("measured", [False, True], ids=["unmeasured", "measured"])
def test_an_observer_that_has_to_wait_is_awaited_before_the_next_one_hears_the_event(measured):
    heard: list[str] = []
    agent = agent_with(_observer("second", heard), _observer("first", heard, waits=True))
    if measured:
        agent.profile_hooks()
    agent.run_sync("go")
    at_turn = heard.index("first turn_start")
    assert heard[at_turn : at_turn + 3] == ["first turn_start", "first waited turn_start", "second turn_start"]


def test_agents_of_one_observer_class_each_hear_on_their_own_instance():
    class Counter:
        name = "counter"

        def __init__(self):
            self.runs = 0

        @hookimpl
        def on_event(self, run, event):
            self.runs += event.name == "run_end"

    first, second = Counter(), Counter()
    agent_with(first).run_sync("go")
    agent_with(second).run_sync("go")
    agent_with(second).run_sync("go")
    assert (first.runs, second.runs) == (1, 2)


# ---------------------------------------------------------------- errors name their plugin
# ``now`` calls plugin methods inline (one argument, or several) and everything else through
# ``_start``: an error names the plugin and the hook either way.


class _FailsIn:
    name = "fails"

    def __init__(self, hook: str, error: Exception):
        self.hook, self.error = hook, error

    def _maybe_fail(self, hook: str) -> None:
        if hook == self.hook:
            raise self.error

    @hookimpl
    def before_turn(self, run):  # one argument
        self._maybe_fail("before_turn")

    @hookimpl
    def should_stop(self, run, turn):  # two arguments
        self._maybe_fail("should_stop")


@pytest.mark.parametrize("hook", ["before_turn", "should_stop"])
def test_a_failing_plain_method_is_a_plugin_error_naming_the_plugin_and_the_hook(hook):
    with pytest.raises(PluginError, match=f"plugin 'fails' failed in {hook}: RuntimeError: budget database down"):
        agent_with(_FailsIn(hook, RuntimeError("budget database down"))).run_sync("go")


@pytest.mark.parametrize("hook", ["before_turn", "should_stop"])
def test_a_bandoneon_error_from_a_plain_method_keeps_its_type_with_a_note_naming_the_plugin(hook):
    with pytest.raises(bandoneon.ConfigError, match="no budget configured") as raised:
        agent_with(_FailsIn(hook, bandoneon.ConfigError("no budget configured"))).run_sync("go")
    assert f"raised by plugin 'fails' in {hook}" in raised.value.__notes__


def test_a_failing_static_implementation_names_its_plugin():
    class Static:
        name = "static"

        @staticmethod
        @hookimpl
        def before_turn(run):
            raise ValueError("no luck")

    with pytest.raises(PluginError, match="plugin 'static' failed in before_turn: ValueError: no luck"):
        agent_with(Static()).run_sync("go")
