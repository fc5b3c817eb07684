"""The compiled hook callers (``hooks.callers[hook](...)``, what the loop calls) answer exactly
what the registry's general awaiting path (``await hooks.call(...)``, the path measured calls
take) answers: generated sets of plugins, sync and async, answering, silent or failing, in every
calling style, give the same calls in the same order, the same answer and the same error."""

from __future__ import annotations

import asyncio
import logging
import types

import pytest
from bandoneon import Calls, PluginError, hookimpl, hookspec
from bandoneon.hooks import Hooks
from hypothesis import given, settings
from hypothesis import strategies as st

SPECS = types.ModuleType("caller_specs")


@hookspec(Calls.FIRST)
def first(a, b):
    """The first answer."""


@hookspec(Calls.COLLECTING)
def collect(a, b):
    """Every answer."""


@hookspec(Calls.CHAINED, chains="b")
def chain(a, b):
    """Each answer replaces b."""


class Ending(str):
    """An answer that ends ``chain_until``'s chain."""


def _only_text(b, answer):
    if not isinstance(answer, str):
        raise TypeError(f"chain_until must answer text, got {answer!r}")
    return f"{b}+{answer}"


@hookspec(Calls.CHAINED, chains="b", fold=_only_text, ends_with=Ending)
def chain_until(a, b):
    """Each answer is folded into b (text only) until one is an Ending."""


@hookspec(Calls.OBSERVING)
def observe(a, b):
    """Answers are ignored, errors logged."""


@hookspec(Calls.FIRST)
def internal_names(_b_r, _b_a0, call):
    """Arguments named like the generated code's own names."""


SPECS.first, SPECS.collect, SPECS.chain, SPECS.chain_until, SPECS.observe, SPECS.internal_names = first, collect, chain, chain_until, observe, internal_names
HOOKS = ("first", "collect", "chain", "chain_until", "observe")


class Publisher:
    name = "publisher"
    hookspecs = SPECS


#: Signatures pluggy accepts: a subset of the arguments, in any order, and defaults.
SIGNATURES = {
    "a_b": ("a, b", "a, b"),
    "b_a": ("b, a", "a, b"),
    "b": ("b", "None, b"),
    "none": ("", "None, None"),
    "a_default_b": ("a, b='default'", "a, b"),
}

implementation = st.fixed_dictionaries(
    {
        "signature": st.sampled_from(sorted(SIGNATURES)),
        "order": st.sampled_from(["tryfirst", "normal", "trylast"]),
        "is_async": st.booleans(),
        "outcome": st.sampled_from(["answers", "silent", "fails", "plugin_error", "ends", "not_text"]),
    }
)
plugin_spec = st.dictionaries(st.sampled_from(HOOKS), implementation, max_size=3)


def build(index: int, spec: dict[str, dict], log: list) -> object:
    namespace: dict = {}
    for hook, impl in spec.items():
        parameters, passed = SIGNATURES[impl["signature"]]
        head = "async def" if impl["is_async"] else "def"
        exec(f"{head} {hook}(self, {parameters}): return self.act({hook!r}, {passed})", namespace)
        options = {} if impl["order"] == "normal" else {impl["order"]: True}
        namespace[hook] = hookimpl(**options)(namespace[hook])

    def act(self, hook, a, b):
        log.append((index, hook, a, b))
        outcome = spec[hook]["outcome"]
        if outcome == "fails":
            raise ValueError(f"{index} broke")
        if outcome == "plugin_error":
            raise PluginError(f"{index} refused")
        if outcome == "ends":
            return Ending(f"{index} ends")
        if outcome == "not_text":
            return index
        return f"{index}:{b}" if outcome == "answers" else None

    cls = type(f"Generated{index}", (), {"name": f"generated-{index}", "act": act, **{h: namespace[h] for h in spec}})
    return cls()


async def outcome_of(call):
    try:
        answer = call()
        if isinstance(answer, types.CoroutineType):
            answer = await answer
        return ("answer", answer)
    except PluginError as exc:
        return ("error", type(exc), str(exc), exc.__notes__ if hasattr(exc, "__notes__") else None)


class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@settings(max_examples=200, deadline=None)
@given(st.lists(plugin_spec, min_size=1, max_size=5), st.integers(), st.text(max_size=3))
def test_compiled_callers_answer_as_the_general_path_does(specs, a, b):
    log: list = []
    hooks = Hooks([Publisher(), *(build(i, s, log) for i, s in enumerate(specs))])
    warnings = Warnings()
    logger = logging.getLogger("bandoneon.hooks")
    logger.addHandler(warnings)
    try:
        for hook in HOOKS:
            seen = []
            for call in (lambda hook=hook: hooks.callers[hook](a, b), lambda hook=hook: hooks.call(getattr(SPECS, hook), a=a, b=b)):
                log.clear()
                warnings.messages.clear()
                seen.append((asyncio.run(outcome_of(call)), list(log), list(warnings.messages)))
            compiled, general = seen
            assert compiled == general
    finally:
        logger.removeHandler(warnings)


def test_hook_arguments_named_like_the_generated_codes_own_names_are_passed_as_they_are():
    class Plugin:
        name = "plugin"

        @hookimpl
        def internal_names(self, call, _b_a0, _b_r):
            return (call, _b_a0, _b_r)

    hooks = Hooks([Publisher(), Plugin()])
    assert hooks.callers["internal_names"](1, 2, 3) == (3, 2, 1)
    assert hooks.now("internal_names", {"_b_r": 1, "_b_a0": 2, "call": 3}) == (3, 2, 1)


def test_a_hook_no_spec_declares_has_no_caller():
    hooks = Hooks([Publisher()])
    with pytest.raises(KeyError, match="no active or installed plugin declares a hook named 'nothing'"):
        hooks.callers["nothing"]  # noqa: B018


def test_measured_calls_go_through_the_measured_path():
    class Plugin:
        name = "plugin"

        @hookimpl
        def first(self, a, b):
            return a + b

    hooks = Hooks([Publisher(), Plugin()])
    assert hooks.callers["first"](1, 2) == 3
    hooks.measure(timeout=5.0, profile=None)
    waiting = hooks.callers["first"](1, 2)
    assert isinstance(waiting, types.CoroutineType)  # measured: the awaiting path, under hook_timeout
    assert asyncio.run(waiting) == 3


def test_an_agent_and_its_hooks_are_freed_when_dropped_without_the_cycle_collector(bare_agent):
    import gc
    import weakref

    from bandoneon.testing import ScriptedModel

    class Plugin:
        name = "plugin"

        @hookimpl
        def should_stop(self, run, turn):
            return None

        @hookimpl
        async def after_turn(self, run, turn):
            return None

    agent = bare_agent(ScriptedModel("done"), plugins=[Plugin()])
    agent.run_sync("hi")
    gone, hooks_gone = weakref.ref(agent), weakref.ref(agent.hooks)
    gc.disable()
    try:
        del agent
        assert gone() is None and hooks_gone() is None  # no cycle through the compiled callers
    finally:
        gc.enable()


def test_ends_with_is_refused_on_a_hook_that_is_not_chained():
    with pytest.raises(ValueError, match="ends_with= ends the chain of a chained hook"):
        hookspec(Calls.FIRST, ends_with=Ending)
