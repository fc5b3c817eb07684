"""Generate ``docs/hooks.md`` from the hookspecs: ``python -m bandoneon.hookdocs [PATH] [--check]``.

The page lists every core hook, then the hooks installed plugins publish, each with its exact
arguments, its calling style (read from the spec) and its docstring. ``--check`` exits 1 when
the page differs from what would be generated (a test runs it).
"""

from __future__ import annotations

import argparse
import inspect
import sys
import types
from pathlib import Path

from . import hookspecs
from .markers import Calls, CallStyle, call_style, hookspecs_in
from .plugins import installed_plugins, plugin_name, published_hookspecs

__all__ = ["render"]

_HEADER = """# Hooks

Every hook a plugin may implement, with its exact arguments and how it is called. Implement any
subset of the arguments; return what the hook's docstring says. Generated from the hookspecs by
`python -m bandoneon.hookdocs docs/hooks.md`; a test fails when this page is stale.
"""


def _describe(style: CallStyle) -> str:
    words = {
        Calls.FIRST: "first answer (the first non-None answer wins; the rest are not called)",
        Calls.CHAINED: f"chained (each answer replaces `{style.chains}` for the next implementation)",
        Calls.COLLECTING: "collecting (every implementation is called; non-None answers are gathered)",
        Calls.OBSERVING: "observing (every implementation is called; a failure is logged, never fatal)",
    }[style.calls]
    if style.ends_with is not None:
        words += f"; a `{style.ends_with.__name__}` answer ends the chain"
    if style.is_process_wide:
        return f"{words}; once per process, on the plugin class or module; must not be async"
    return f"{words}; {'must not be async' if style.is_sync else 'may be async'}"


def _section(module: types.ModuleType | type, level: str) -> list[str]:
    lines = []
    for name, spec in hookspecs_in(module).items():
        arguments = ", ".join(inspect.signature(spec).parameters)
        lines += [f"{level} `{name}({arguments})`", "", f"*Calling style: {_describe(call_style(spec))}.*", ""]
        doc = (inspect.getdoc(spec) or "").replace(".. versionadded:: ", "*Added in ").splitlines()
        lines += [f"{line}.*" if line.startswith("*Added in ") else line for line in doc]
        lines.append("")
    return lines


def render(extra: dict[str, types.ModuleType | type] | None = None) -> str:
    """The page: the core's hooks, then those of ``extra`` (plugin name -> spec module;
    default: what the installed plugins publish)."""
    if extra is None:
        extra = {}
        for entry in installed_plugins().values():
            plugin = entry.load()
            specs = published_hookspecs(plugin) if plugin is not None else None
            if specs is not None:
                extra[plugin_name(plugin)] = specs
    lines = [_HEADER, *_section(hookspecs, "##")]
    if extra:
        lines += ["# Hooks published by plugins", "", "Implemented like core hooks; the publishing plugin calls them.", ""]
        for name in sorted(extra):
            lines += [f"## Published by `{name}` (`{extra[name].__name__}`)", "", *_section(extra[name], "###")]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bandoneon.hookdocs", description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default="docs/hooks.md")
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale, without writing")
    args = parser.parse_args(argv)
    page = render()
    path = Path(args.path)
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != page:
            print(f"{path} is stale: run `python -m bandoneon.hookdocs {path}`", file=sys.stderr)
            return 1
        return 0
    path.write_text(page, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
