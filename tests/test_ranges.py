"""Numeric options: one shared range check, a documented range for every option, errors that name both."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import bandoneon
from bandoneon.config import OPTION_RANGES

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("context_window = -5", "context_window must be a whole number of at least 256 tokens, got -5"),
        ("context_window = 10", "context_window must be a whole number of at least 256 tokens, got 10"),
        ("run_timeout = -1", "run_timeout must be above 0 seconds, got -1"),
        ("tool_timeout = 0", "tool_timeout must be above 0 seconds, got 0"),
        ("max_turns = 0", "max_turns must be a whole number of at least 1, got 0"),
    ],
)
def test_a_number_out_of_range_in_bandoneon_toml_names_the_file_the_key_and_the_range(tmp_path, line, message):
    config = tmp_path / "bandoneon.toml"
    config.write_text(f'model = "openai-compatible:m@http://127.0.0.1:9/v1"\n{line}\n')
    with pytest.raises(bandoneon.ConfigError) as caught:
        bandoneon.load_config(config)
    assert str(caught.value).startswith(f"{config}: ")
    assert message in str(caught.value).replace(".0,", ",")
    assert config.read_text().endswith(f"{line}\n")  # nothing was rewritten


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("run_timeout", -1, "run_timeout must be above 0 seconds, got -1"),
        ("context_window", 10, "context_window must be a whole number of at least 256 tokens, got 10"),
        ("max_turns", 0, "max_turns must be a whole number of at least 1, got 0"),
        ("max_tool_concurrency", 0, "max_tool_concurrency must be a whole number of at least 1, got 0"),
        ("turn_timeout", True, "turn_timeout must be above 0 seconds, got True"),
        ("max_send_backs", -1, "max_send_backs must be a whole number of at least 0, got -1"),
    ],
)
def test_an_agent_argument_out_of_range_is_refused_before_anything_runs(option, value, message):
    with pytest.raises(bandoneon.ConfigError, match=re.escape(message)):
        bandoneon.Agent(bandoneon.testing.ScriptedModel(["hi"]), plugins=[], context_files=False, **{option: value})


def test_a_plugin_option_out_of_range_in_bandoneon_toml_says_the_plugin_once(tmp_path):
    config = tmp_path / "bandoneon.toml"
    config.write_text('model = "openai-compatible:m@http://127.0.0.1:9/v1"\n[plugins.compaction]\nthreshold = 1.5\n')
    with pytest.raises(bandoneon.ConfigError) as caught:
        bandoneon.Agent(config=config)
    assert str(caught.value) == f"{config}: options of plugin 'compaction': threshold must be above 0 and at most 1, got 1.5"


ranges = st.builds(
    bandoneon.in_range,
    at_least=st.one_of(st.none(), st.integers(-10, 10)),
    at_most=st.one_of(st.none(), st.integers(10, 20)),
    optional=st.booleans(),
    integer=st.booleans(),
)
values = st.one_of(st.none(), st.booleans(), st.integers(-30, 30), st.floats(allow_nan=True), st.text(max_size=3))


@given(ranges, values)
def test_check_refuses_exactly_what_contains_refuses_and_names_key_and_range(range_, value):
    if range_.contains(value):
        range_.check("size", value)
        return
    with pytest.raises(bandoneon.ConfigError) as caught:
        range_.check("size", value, owner="demo")
    assert str(caught.value).startswith(f"demo: size must be {range_.describe()}, got ")


def test_the_two_bounds_and_the_open_one_read_as_words_and_symbols():
    assert bandoneon.in_range(above=0, at_most=1).describe() == "above 0 and at most 1"
    assert bandoneon.in_range(above=0, at_most=1).short == "0 < x ≤ 1"
    assert bandoneon.in_range(at_least=-1, at_most=1).short == "-1 ≤ x ≤ 1"
    assert bandoneon.in_range(at_least=1, integer=True).short == "≥ 1"
    with pytest.raises(ValueError):
        bandoneon.in_range(at_least=0, above=0)


# ---------------------------------------------------------------- every option has a documented range


def _is_number(annotation: object) -> bool:
    if isinstance(annotation, str):
        return bool(re.fullmatch(r"(int|float)( \| None)?", annotation))
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return all(a in (int, float, type(None)) for a in typing.get_args(annotation))
    return annotation in (int, float)


def _range_of(field: attrs.Attribute) -> bandoneon.Range | None:
    validator = field.validator
    found = [validator] if isinstance(validator, bandoneon.Range) else [v for v in getattr(validator, "_validators", ()) if isinstance(v, bandoneon.Range)]
    return found[0] if found else None


def _numeric_options():
    for name, entry in sorted(bandoneon.installed_plugins().items()):
        cls = entry.load()
        if cls is None or not attrs.has(cls):
            continue
        for field in attrs.fields(cls):
            if field.init and not field.name.startswith("_") and field.name not in {"seed"} and _is_number(field.type):
                yield name, cls, field


NUMERIC = list(_numeric_options())


def test_some_plugin_options_are_numbers():
    assert {name for name, _, _ in NUMERIC} >= {"compaction", "memory", "retry", "sandbox", "stop", "tracing", "human", "skills"}


@pytest.mark.parametrize(("plugin", "cls", "field"), NUMERIC, ids=[f"{n}.{f.name}" for n, _, f in NUMERIC])
def test_every_numeric_plugin_option_has_a_range_its_readme_states(plugin, cls, field):
    found = _range_of(field)
    assert found is not None, f"{plugin}: option {field.name} has no bandoneon.in_range validator"
    readme = (ROOT / "plugins" / plugin / "README.md").read_text(encoding="utf-8")
    rows = [line for line in readme.splitlines() if line.startswith(f"| `{field.name}`")]
    assert rows, f"{plugin}/README.md has no options-table row for {field.name}"
    assert any(found.short in row for row in rows), f"{plugin}/README.md: the row of {field.name} does not state its range ({found.short})"


@pytest.mark.parametrize("option", sorted(OPTION_RANGES))
def test_every_numeric_core_option_states_its_range_in_the_readme(option):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = [line for line in readme.splitlines() if line.startswith(f"| `{option}`")]
    assert rows and OPTION_RANGES[option].short in rows[0], f"README.md: no row for {option} with its range {OPTION_RANGES[option].short}"


# Values that are equal without being the same (1, 1.0, True), and ones that are not equal to themselves (nan).
_numbers = st.one_of(st.sampled_from([0, 1, 2, 1.0, 2.0, 2.5, True, False, None, float("nan"), float("inf"), -1]), st.integers(-5, 5), st.floats())


@given(
    st.builds(bandoneon.in_range, at_least=st.sampled_from([None, 0, 1]), at_most=st.sampled_from([None, 1, 3]), optional=st.booleans(), integer=st.booleans()),
    st.lists(_numbers, max_size=8),
)
def test_a_range_checked_again_and_again_answers_as_a_fresh_one(bounds, values):
    """Each range remembers the last value it accepted (by identity, a fast path for defaults):
    whatever came before, every check answers what a range that never saw a value answers."""
    for value in values:
        for form in ("check", "validator"):
            assert _refusal(bounds, form, value) == _refusal(attrs.evolve(bounds), form, value)


@attrs.define
class Holder:
    value: object = None


def _refusal(bounds: bandoneon.Range, form: str, value: object) -> str | None:
    """The error checking ``value`` gives, in the plain form or the attrs-validator one."""
    try:
        if form == "check":
            bounds.check("value", value)
        else:
            bounds(Holder(), attrs.fields(Holder).value, value)
    except bandoneon.ConfigError as exc:
        return str(exc)
    return None
