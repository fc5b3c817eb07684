"""Meta-tests in the spirit of datasette's: every hook is documented with its exact arguments,
and every hook is exercised by at least one test."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from bandoneon import hookspecs

ROOT = Path(__file__).resolve().parents[1]
HOOKS = [name for name, value in vars(hookspecs).items() if callable(value) and hasattr(value, "bandoneon_spec")]


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented_with_its_exact_arguments(hook):
    arguments = ", ".join(inspect.signature(getattr(hookspecs, hook)).parameters)
    assert f"## `{hook}({arguments})`" in (ROOT / "docs" / "hooks.md").read_text()


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_docstring_saying_what_none_means(hook):
    doc = inspect.getdoc(getattr(hookspecs, hook))
    assert doc and "versionadded" in doc


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_exercised_by_a_core_test(hook):
    tests = [p for p in (ROOT / "tests").glob("test_*.py") if p.name != Path(__file__).name]
    assert any(f"def {hook}(" in p.read_text() for p in tests), f"no core test implements {hook}"
