"""Review of issue 2's workspace promises: hookspec docstrings, lazy import, the pytest11 fixtures,
the README's testing example, the examples against a configured endpoint, the benchmark harness."""

from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import bandoneon
from bandoneon import hookspecs
from bandoneon.testing import Fault, Reply

ROOT = Path(__file__).resolve().parents[1]
HOOKS = [name for name, value in vars(hookspecs).items() if callable(value) and hasattr(value, "bandoneon_spec")]
ANSWERING_HOOKS = [hook for hook in HOOKS if inspect.signature(getattr(hookspecs, hook)).return_annotation not in (None, "None")]


def python(code_or_args: list[str] | str, *, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else code_or_args
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env={**os.environ, **(env or {})}, timeout=120)


# ---------------------------------------------------------------- hookspecs


def test_every_hookspec_docstring_describes_each_parameter():
    missing = {
        hook: [name for name in inspect.signature(getattr(hookspecs, hook)).parameters if f":param {name}:" not in inspect.getdoc(getattr(hookspecs, hook))]
        for hook in HOOKS
    }
    assert {hook: names for hook, names in missing.items() if names} == {}


@pytest.mark.parametrize("hook", ANSWERING_HOOKS)
def test_every_hookspec_that_answers_says_what_none_means(hook):
    doc = inspect.getdoc(getattr(hookspecs, hook))
    assert ":return:" in doc and "None" in doc.split(":return:")[1]


def test_no_hookspec_is_a_pluggy_firstresult_hook():
    """First-answer hooks must not be firstresult: a coroutine is never None (DESIGN §3)."""
    assert [hook for hook in HOOKS if getattr(hookspecs, hook).bandoneon_spec.get("firstresult")] == []


# ---------------------------------------------------------------- lazy import


def test_import_bandoneon_imports_no_plugin_no_http_client_and_no_metadata_scan():
    code = textwrap.dedent("""
        import sys, bandoneon
        print(sorted(m for m in sys.modules if m.startswith("bandoneon_") or m in ("httpx", "importlib.metadata", "tomllib", "bandoneon.testing")))
        bandoneon.installed_plugins()
        print(sorted(m for m in sys.modules if m.startswith("bandoneon_")))
    """)
    done = python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "[]"]


# Modules `import bandoneon` leaves for first use (issue #19): the events (a run or a listener
# loads them), the OpenAI-compatible provider, and stdlib modules only rare paths need.
DEFERRED_MODULES = ("bandoneon.events", "bandoneon.providers.openai", "bandoneon.providers.openai_wire", "logging", "tempfile", "dataclasses")


def test_import_bandoneon_leaves_the_events_the_openai_provider_and_logging_for_first_use():
    done = python(f"import sys, bandoneon; print(sorted(m for m in {DEFERRED_MODULES!r} if m in sys.modules))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_every_public_name_resolves_and_is_listed_by_dir_even_before_its_module_loads():
    code = textwrap.dedent("""
        import bandoneon
        assert set(bandoneon.__all__) <= set(dir(bandoneon)), set(bandoneon.__all__) - set(dir(bandoneon))
        missing = [name for name in bandoneon.__all__ if not hasattr(bandoneon, name)]
        from bandoneon import RunEnd, event_names
        import bandoneon.events
        print(missing, RunEnd is bandoneon.events.RunEnd, "run_end" in event_names())
    """)
    done = python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] True True"
    assert not hasattr(bandoneon, "no_such_name")


def test_every_core_event_is_a_public_name_of_bandoneon():
    """The deferred names of ``bandoneon/__init__.py`` list the events by hand (importing the
    events module to read them would load it): a new event must be added there too."""
    import bandoneon.events

    assert set(bandoneon.events.__all__) <= set(bandoneon.__all__)


# ---------------------------------------------------------------- the pytest11 fixtures


def test_the_fixtures_come_with_the_package_through_the_pytest11_entry_point(tmp_path):
    (tmp_path / "test_user_agent.py").write_text(textwrap.dedent("""
        import bandoneon
        from bandoneon.testing import Reply

        def test_mock_llm_is_a_running_server(mock_llm):
            mock_llm.add(Reply(text="hi"))
            agent = bandoneon.Agent(f"openai-compatible:m@{mock_llm.base_url}", plugins=[], context_files=False)
            assert agent.run_sync("hi").text == "hi"

        def test_scripted_fails_when_a_reply_was_never_used(scripted):
            scripted.add("never requested")
    """))
    done = python(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user_agent.py"], cwd=tmp_path)
    assert "2 passed, 1 error" in done.stdout, done.stdout + done.stderr
    assert "scripted replies were never requested" in done.stdout


# ---------------------------------------------------------------- the README's testing example


@bandoneon.tool
def get_forecast(city: str, date: str) -> str:
    """Daily forecast for one city: rain chance and min/max temperature. date is YYYY-MM-DD."""
    return f"{city} on {date}: 80% chance of rain"


def test_the_readmes_testing_example_passes_as_written(mock_llm, monkeypatch):
    """README, 'Testing your agents': a 503 then a tool call then the answer, with the default plugins."""
    monkeypatch.setenv("BANDONEON_DISABLED_PLUGINS", "policy-example")
    bandoneon.refresh_plugins()
    try:
        if "retry" not in bandoneon.installed_plugins():
            pytest.skip("the README's example relies on the retry plugin being installed")
        mock_llm.add(Fault(status=503), Reply(tool_calls=[("get_forecast", {"city": "Paris", "date": "2026-09-26"})]), Reply(text="Rain."))
        agent = bandoneon.Agent(f"openai-compatible:m@{mock_llm.base_url}", tools=[get_forecast])
        assert agent.run_sync("rain?").text == "Rain."
    finally:
        monkeypatch.undo()
        bandoneon.refresh_plugins()


# ---------------------------------------------------------------- the examples against a configured endpoint


EXAMPLE_SCRIPTS = {
    "quickstart": (
        [Reply(tool_calls=[("get_forecast", {"city": "Buenos Aires", "date": "2026-09-26"})]), Reply(text="Rain likely.")],
        ["tool call: get_forecast", "stop=end_turn ok=True"],
    ),
    "level_00_toolkit": (
        [Reply(text="Noted."), Reply(tool_calls=[("get_forecast", {"city": "Buenos Aires", "date": "2026-09-26"})]), Reply(text="Rain, 70%.")],
        ["Rain, 70%.", "6 messages in the history"],
    ),
    "level_01_what_is_an_agent": (
        [Reply(tool_calls=[("ask_villager", {"name": "fisher"})]), Reply(tool_calls=[("search_area", {"place": "old oak"})]), Reply(text="In the crow's nest.")],
        ["ask_villager -> search_area", "stop=end_turn"],
    ),
    "level_02_agent_loop": (
        [Reply(tool_calls=[("launch_red", {"angle": 20})]), Reply(tool_calls=[("launch_bomb", {"angle": 42})]), Reply(text="Cleared.")],
        ["launch_bomb: Boom!", "turns=3"],
    ),
    "level_03_designing_a_tool": (
        [Reply(tool_calls=[("identify_wild", {"creature": "Splashy"})]), Reply(tool_calls=[("check_matchup", {"attack": "grass", "defend": "Water!"})]),
         Reply(tool_calls=[("check_matchup", {"attack": "grass", "defend": "water"})]), Reply(text="Send grass.")],
        ["Send grass.", "stop=end_turn"],
    ),
    "level_06_hooks": (
        [Reply(tool_calls=[("find_trains", {"to": "Mar del Plata", "date": "Friday"})]), Reply(tool_calls=[("book_ticket", {"train": 101, "seat_class": "first"})]),
         Reply(tool_calls=[("book_ticket", {"train": 101, "seat_class": "tourist"})]), Reply(text="Tourist on train 101, seat 14B.")],
        ["book_ticket refused: Blocked by policy", "DNI ***", "Tourist on train 101"],
    ),
}


@pytest.mark.parametrize("example", list(EXAMPLE_SCRIPTS))
def test_each_core_example_runs_as_a_script_against_the_configured_endpoint(mock_llm, tmp_path, example):
    replies, expected = EXAMPLE_SCRIPTS[example]
    mock_llm.add(*replies)
    env = {
        "BANDONEON_MODEL": "openai-compatible:mock",
        "BANDONEON_BASE_URL": mock_llm.base_url,
        "BANDONEON_DISABLED_PLUGINS": "policy-example",
        "PYTHONWARNINGS": "ignore",
    }
    done = python([str(ROOT / "examples" / f"{example}.py")], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    for text in expected:
        assert text in done.stdout, done.stdout
    mock_llm.assert_all_used()
    assert all(request.json["model"] == "mock" for request in mock_llm.requests if request.method == "POST")
    if example == "level_06_hooks":
        assert "30.123.456" not in str([r.json for r in mock_llm.requests])


# ---------------------------------------------------------------- the benchmark harness


def _benchmark_module(name: str):
    spec = importlib.util.spec_from_file_location(f"review_bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_loop_benchmark_drives_bandoneon_and_the_bare_loop_through_the_same_two_turns():
    scenarios = _benchmark_module("scenarios")
    timing = _benchmark_module("timing")
    assert await scenarios.bare_loop() == scenarios.ANSWER
    agent = scenarios.bandoneon_agent([])
    turns = []
    agent.on("turn_end", turns.append)
    await scenarios.bandoneon_run(agent)
    assert len(turns) == 2 and [m.role for m in agent.messages] == ["user", "assistant", "tool", "assistant"]
    comparison = await timing.compare_async(
        {"bare": scenarios.bare_loop, "bandoneon": lambda: scenarios.bandoneon_run(agent)}, iterations=3, rounds=2, warmup=1
    )
    medians = comparison.medians()
    assert set(medians) == {"bare", "bandoneon"} and all(value > 0 for value in medians.values())
    assert comparison.ratio("bandoneon", "bare") > 0

