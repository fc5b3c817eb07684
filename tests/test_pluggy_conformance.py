"""The registry is pluggy's semantics at bandoneon's speed: generated sets of plugins run through a
real ``pluggy.PluginManager`` and through ``bandoneon.hooks.Hooks`` give identical calls (which
implementation, in which order, with which arguments) and identical results, for every sync
calling style (first answer, collecting)."""

from __future__ import annotations

import types

import pluggy
from bandoneon import Calls, PROJECT, hookimpl, hookspec
from bandoneon.hooks import Hooks
from hypothesis import given, settings
from hypothesis import strategies as st

# The hooks under test, as bandoneon declares them (published by a plugin, like any plugin's)...
SPECS = types.ModuleType("conformance_specs")


@hookspec(Calls.COLLECTING, sync=True)
def gather(a, b):
    """Every answer."""


@hookspec(Calls.FIRST, sync=True)
def pick(a, b):
    """The first answer."""


SPECS.gather, SPECS.pick = gather, pick

# ...and as pluggy declares the same contract (a first answer is pluggy's firstresult).
_pluggy_spec = pluggy.HookspecMarker(PROJECT)


class PluggySpecs:
    @_pluggy_spec
    def gather(self, a, b):
        """Every answer."""

    @_pluggy_spec(firstresult=True)
    def pick(self, a, b):
        """The first answer."""


class Publisher:
    """Publishes the specs; implements nothing."""

    name = "publisher"
    hookspecs = SPECS


#: Implementation signatures pluggy accepts: a subset of the spec's arguments, parameters with a
#: default (pluggy passes the caller's value when the spec has it, else the default).
SIGNATURES = {
    "a_b": "def {hook}(self, a, b): return self.answer('{hook}', a, b)",
    "b": "def {hook}(self, b): return self.answer('{hook}', None, b)",
    "none": "def {hook}(self): return self.answer('{hook}', None, None)",
    "a_default_b": "def {hook}(self, a, b='default'): return self.answer('{hook}', a, b)",
    "extra_default": "def {hook}(self, a, extra='kept'): return self.answer('{hook}', a, extra)",
}

implementation = st.fixed_dictionaries(
    {
        "signature": st.sampled_from(sorted(SIGNATURES)),
        "order": st.sampled_from(["tryfirst", "normal", "trylast"]),
        "answers": st.booleans(),
    }
)
plugin_spec = st.dictionaries(st.sampled_from(["gather", "pick"]), implementation, max_size=2)


def build_plugin_class(index: int, spec: dict[str, dict], log: list) -> type:
    namespace: dict = {}
    for hook, impl in spec.items():
        exec(SIGNATURES[impl["signature"]].format(hook=hook), namespace)
        options = {} if impl["order"] == "normal" else {impl["order"]: True}
        namespace[hook] = hookimpl(**options)(namespace[hook])

    def answer(self, hook, a, b):
        log.append((index, hook, a, b))
        return (index, a, b) if spec[hook]["answers"] else None

    return type(f"Generated{index}", (), {"name": f"generated-{index}", "answer": answer, **{h: namespace[h] for h in spec}})


@settings(max_examples=150, deadline=None)
@given(st.lists(plugin_spec, min_size=1, max_size=6), st.integers(), st.text(max_size=3))
def test_pluggy_and_the_registry_call_the_same_implementations_in_the_same_order(specs, a, b):
    ours_log: list = []
    theirs_log: list = []
    ours = Hooks([Publisher(), *(build_plugin_class(i, s, ours_log)() for i, s in enumerate(specs))])
    manager = pluggy.PluginManager(PROJECT)
    manager.add_hookspecs(PluggySpecs)
    manager.register(Publisher(), name="publisher")
    for i, s in enumerate(specs):
        manager.register(build_plugin_class(i, s, theirs_log)(), name=f"generated-{i}")
    manager.check_pending()

    for spec, relay in ((SPECS.gather, manager.hook.gather), (SPECS.pick, manager.hook.pick)):
        ours_log.clear()
        theirs_log.clear()
        assert ours.call_sync(spec, a=a, b=b) == relay(a=a, b=b)
        assert ours_log == theirs_log
