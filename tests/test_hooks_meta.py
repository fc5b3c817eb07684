"""Meta-tests in the spirit of datasette's: every hook declares how it is called, the page
documenting every hook is generated from the specs and current, and every hook is exercised
by at least one test."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from bandoneon import hookspecs
from bandoneon.hookdocs import main as hookdocs_main
from bandoneon.hookdocs import render
from bandoneon.markers import call_style

ROOT = Path(__file__).resolve().parents[1]
HOOKS = [name for name, value in vars(hookspecs).items() if callable(value) and hasattr(value, "bandoneon_spec")]


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented_with_its_exact_arguments(hook):
    arguments = ", ".join(inspect.signature(getattr(hookspecs, hook)).parameters)
    assert f"## `{hook}({arguments})`" in (ROOT / "docs" / "hooks.md").read_text()


def test_docs_hooks_md_is_what_the_generator_writes_from_the_specs():
    assert (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8") == render(), "run `python -m bandoneon.hookdocs docs/hooks.md`"


def test_the_generator_check_fails_on_a_stale_page(tmp_path, capsys):
    stale = tmp_path / "hooks.md"
    stale.write_text(render().replace("before_turn", "before_tern"), encoding="utf-8")
    assert hookdocs_main([str(stale), "--check"]) == 1
    assert "is stale: run `python -m bandoneon.hookdocs" in capsys.readouterr().err
    assert hookdocs_main([str(stale)]) == 0
    assert hookdocs_main([str(stale), "--check"]) == 0


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_declares_its_calling_style_and_the_page_shows_it(hook):
    style = call_style(getattr(hookspecs, hook))
    section = render().split(f"## `{hook}(")[1]
    assert section.split("\n\n")[1].startswith("*Calling style: ")
    assert ("must not be async" in section.split("\n\n")[1]) == style.is_sync


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_docstring_saying_what_none_means(hook):
    doc = inspect.getdoc(getattr(hookspecs, hook))
    assert doc and "versionadded" in doc


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_exercised_by_a_core_test(hook):
    tests = [p for p in (ROOT / "tests").glob("test_*.py") if p.name != Path(__file__).name]
    assert any(f"def {hook}(" in p.read_text() for p in tests), f"no core test implements {hook}"
