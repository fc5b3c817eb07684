"""Per-run plugin state under typed keys (``run.stash``), and the core keeping none of its own there."""

from __future__ import annotations

import bandoneon
import pytest
from bandoneon import StashKey, hookimpl
from bandoneon.testing import ScriptedModel, call

COUNT = StashKey[int]("counter.tools")


@bandoneon.tool
def ping() -> str:
    """Ping the server and return pong."""
    return "pong"


class Counter:
    def __init__(self):
        self.per_run = []

    @hookimpl
    def after_tool_execution(self, run):
        run.stash[COUNT] = run.stash.get(COUNT, 0) + 1

    @hookimpl
    def after_run(self, run):
        self.per_run.append(run.stash.get(COUNT, 0))


def test_what_a_plugin_stashes_lives_as_long_as_the_run():
    counter = Counter()
    agent = bandoneon.Agent(ScriptedModel(call("ping"), call("ping"), "done", "again"), tools=[ping], plugins=[counter], context_files=False)
    agent.run_sync("first")
    agent.run_sync("second")
    assert counter.per_run == [2, 0]


def test_two_keys_with_one_name_never_collide():
    one, two = StashKey[str]("same"), StashKey[str]("same")
    stash = bandoneon.Stash()
    stash[one] = "a"
    assert two not in stash and stash.get(two) is None and stash.setdefault(two, "b") == "b"
    assert (stash[one], stash[two], len(stash)) == ("a", "b", 2)
    assert stash.pop(one) == "a" and one not in stash


def test_reading_a_key_never_set_is_a_key_error_naming_it():
    with pytest.raises(KeyError, match=r"nothing is stashed under StashKey\('counter.tools'\)"):
        bandoneon.Stash()[COUNT]


def test_the_core_leaves_the_stash_empty_and_offers_no_string_keyed_state():
    seen = []

    class Observer:
        @hookimpl
        def after_run(self, run):
            seen.append(len(run.stash))
            assert not hasattr(run, "state")

    bandoneon.Agent(ScriptedModel(call("ping"), "done"), tools=[ping], plugins=[Observer()], context_files=False).run_sync("go")
    assert seen == [0]
