"""The ``bandoneon`` command: run, chat, plugins, init, tools check, and plugins' own commands.

Exit codes of ``run``: 0 when the run ended with an answer, 2 when it ended without one
(the reason on stderr), 1 on an error.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import BandoneonError
from .providers.base import model_at

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    warnings.formatwarning = _one_line_warning
    try:
        parser = build_parser()  # plugins add their commands here
    except BandoneonError as exc:
        print(f"bandoneon: {exc}", file=sys.stderr)
        return 1
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 1
    try:
        return int(handler(args) or 0)
    except BandoneonError as exc:
        print(f"bandoneon: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _one_line_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> str:
    return f"bandoneon: {category.__name__}: {message}\n"


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bandoneon", description="An async agent harness built from plugins.")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    run = commands.add_parser("run", help="run an agent on one prompt and print the answer")
    run.add_argument("prompt")
    _agent_options(run)
    run.add_argument("--json", action="store_true", help="print the RunResult as JSON")
    run.set_defaults(handler=_run)

    chat = commands.add_parser("chat", help="talk with an agent; the history is kept")
    _agent_options(chat)
    chat.add_argument("--session", help="keep the conversation under this session id (needs bandoneon-sessions)")
    chat.add_argument("--session-path", help="where sessions are kept (a folder for JSONL, or a .sqlite3 file)")
    chat.set_defaults(handler=_chat)

    plugins = commands.add_parser("plugins", help="list installed plugins, what they hook, whether active")
    plugins.set_defaults(handler=_plugins)

    init = commands.add_parser("init", help="write a commented bandoneon.toml here")
    init.add_argument("--model", default="local:")
    init.add_argument("--path", default="bandoneon.toml")
    init.set_defaults(handler=_init)

    tools = commands.add_parser("tools", help="tool utilities")
    tools.set_defaults(handler=lambda args: _help(tools))
    tools_commands = tools.add_subparsers(title="tools commands", metavar="COMMAND")
    check = tools_commands.add_parser("check", help="review tools the way the model sees them")
    check.add_argument("target", nargs="?", help="MODULE or MODULE:ATTR (a tool, a list of tools, or an agent)")
    check.add_argument("--max-tools", type=int, default=20)
    check.add_argument("--strict", action="store_true", help="treat warnings as errors")
    check.add_argument("--sample", nargs=2, action="append", default=[], metavar=("MODULE:FUNCTION", "ARGS_JSON"), help="run a tool on these arguments and measure its result; repeatable (tools' own examples= are run too)")
    check.add_argument("--window", type=int, default=None, metavar="TOKENS", help="the model's context window results are measured against (default 32000)")
    check.add_argument("--max-share", type=float, default=None, metavar="SHARE", help="warn when one result takes more than this share of the window (default 0.05)")
    check.set_defaults(handler=_tools_check)

    from .hooks import registration_hooks

    registration_hooks().register_commands(subparsers=commands)
    return parser


def _agent_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="PROVIDER:MODEL, e.g. local: or ollama:llama3.1")
    parser.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://localhost:11434/v1")
    parser.add_argument("--max-turns", type=int)
    parser.add_argument("--system", help="system prompt")
    parser.add_argument("--tools", help="MODULE[:ATTR] whose tools the agent gets")
    parser.add_argument("--config", help="path to bandoneon.toml")


def _make_agent(args: argparse.Namespace, **extra: Any) -> Any:
    from .agent import Agent

    model = model_at(args.model, args.base_url) if args.base_url else args.model
    tools = load_tools(args.tools) if args.tools else []
    return Agent(model, tools=tools, system_prompt=args.system, max_turns=args.max_turns, config=args.config, **extra)


def _run(args: argparse.Namespace) -> int:
    agent = _make_agent(args)
    result = agent.run_sync(args.prompt)
    if args.json:
        print(json.dumps(result_as_json(result), indent=2, ensure_ascii=False))
    elif result.text:
        print(result.text)
    elif result.answer is not None:
        print(json.dumps(result.answer, ensure_ascii=False, default=str))
    if not result.ok:
        print(f"bandoneon: the run ended without an answer: {result.stop}" + (f" ({result.detail})" if result.detail else ""), file=sys.stderr)
        return 2
    return 0


def result_as_json(result: Any) -> dict[str, Any]:
    from .structuring import unstructure

    return {
        "stop": result.stop,
        "ok": result.ok,
        "text": result.text,
        "answer": result.answer,
        "turns": result.turns,
        "detail": result.detail,
        "usage": unstructure(result.usage),
        "messages": unstructure(list(result.messages)),
        "run_id": result.run_id,
    }


def _chat(args: argparse.Namespace) -> int:
    plugins = None
    if args.session:
        try:
            from bandoneon_sessions import open_session_plugin  # type: ignore[import-not-found]
        except ImportError:
            print("bandoneon: --session needs the bandoneon-sessions plugin: pip install bandoneon-sessions", file=sys.stderr)
            return 1
        from .config import load_config
        from .plugins import configured_plugins

        config = load_config(args.config)
        plugins = [*configured_plugins(config.plugins, source=config.source), open_session_plugin(args.session, args.session_path)]
    agent = _make_agent(args, plugins=plugins)
    print("bandoneon chat. Empty line or Ctrl-D to leave.", file=sys.stderr)
    try:
        while True:
            try:
                prompt = input("> ").strip()
            except EOFError:
                break
            if not prompt:
                break
            result = agent.run_sync(prompt)
            print(result.text or f"[no answer: {result.stop}]")
    finally:
        agent.close()
    return 0


def _plugins(args: argparse.Namespace) -> int:
    from .plugins import default_plugin_classes, installed_plugins, policy_pack_classes

    found = installed_plugins()
    if not found:
        print("no plugins installed")
        return 0
    defaults = set(default_plugin_classes())
    packs = set(policy_pack_classes())
    rows = []
    for name, entry in sorted(found.items()):
        cls = entry.load()
        if cls is None:
            rows.append((name, entry.distribution or "?", entry.version or "?", "BROKEN", entry.error or "", ""))
            continue
        status = "policy pack (always on)" if cls in packs else ("default" if cls in defaults else "opt-in")
        hooks = ", ".join(sorted(_implemented_hooks(cls)))
        cost = f"{(entry.import_seconds or 0) * 1000:.1f} ms"
        rows.append((name, entry.distribution or "?", entry.version or "?", status, hooks, cost))
    width = [max(len(str(row[i])) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(str(row[i]).ljust(width[i]) for i in range(4)) + f"  import {row[5]}" + (f"\n    hooks: {row[4]}" if row[4] else ""))
    return 0


def _implemented_hooks(cls: type) -> set[str]:
    from . import hookspecs

    return {name for name in dir(cls) if hasattr(hookspecs, name) and hasattr(getattr(cls, name), "bandoneon_impl")}


def _init(args: argparse.Namespace) -> int:
    from .config import write_default_config

    write_default_config(Path(args.path), model=args.model)
    print(f"wrote {args.path}")
    return 0


# ---------------------------------------------------------------- tools


def load_tools(target: str) -> list[Any]:
    """The tools named by ``MODULE[:ATTR]``: a Tool, a function, a list of them, an Agent, or every Tool in the module."""
    from .agent import Agent
    from .errors import ConfigError
    from .tools import Tool

    module_name, _, attr = target.partition(":")
    sys.path.insert(0, str(Path.cwd()))
    try:
        if module_name.endswith(".py") or "/" in module_name:
            import runpy

            namespace = runpy.run_path(module_name)
        else:
            namespace = vars(importlib.import_module(module_name))
    except Exception as exc:  # a syntax error or a failing import in the user's file: one clear line
        raise ConfigError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    finally:
        sys.path.pop(0)
    if attr:
        if attr not in namespace:
            raise ConfigError(f"{module_name!r} has no attribute {attr!r}")
        value = namespace[attr]
    else:
        value = [v for v in namespace.values() if isinstance(v, Tool)]
    if isinstance(value, Agent):
        return list(value.tools.values())
    if isinstance(value, Tool):
        return [value]
    if isinstance(value, (list, tuple)):
        return list(value)
    if callable(value):  # a plain function: the caller makes it a tool, as @tool would
        return [value]
    raise ConfigError(f"{target!r} is not a tool, a function, a list of tools or an agent")


def _tools_check(args: argparse.Namespace) -> int:
    from .errors import ConfigError
    from .toolcheck import DEFAULT_MAX_SHARE, DEFAULT_WINDOW, check_tools, measure_examples, measure_tool
    from .tools import Tool
    from .tools import tool as make_tool

    window = DEFAULT_WINDOW if args.window is None else args.window
    max_share = DEFAULT_MAX_SHARE if args.max_share is None else args.max_share
    if window < 1 or not 0 < max_share <= 1:
        raise ConfigError(f"--window must be a positive number of tokens and --max-share in (0, 1], got {window} and {max_share}")
    if args.target is None and not args.sample:
        raise ConfigError("name the tools to check (MODULE[:ATTR]) or give --sample MODULE:FUNCTION ARGS_JSON")
    tools = [t if isinstance(t, Tool) else make_tool(t) for t in load_tools(args.target)] if args.target else []
    samples = []
    for target, raw in args.sample:
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--sample {target} {raw!r}: the arguments are not JSON ({exc.msg} at character {exc.pos})") from None
        if not isinstance(arguments, dict):
            raise ConfigError(f"--sample {target} {raw!r}: the arguments must be one JSON object")
        found = load_tools(target)
        if len(found) != 1:
            raise ConfigError(f"--sample {target}: name one tool or function (MODULE:FUNCTION)")
        samples.append((found[0] if isinstance(found[0], Tool) else make_tool(found[0]), arguments))
    if args.target and not tools:
        print(f"bandoneon: no tools found in {args.target!r} (name one with MODULE:ATTR)", file=sys.stderr)
        return 1
    findings = check_tools(tools, max_tools=args.max_tools) if tools else []
    findings += measure_examples(tools, window=window, max_share=max_share)
    for sample_tool, arguments in samples:
        findings += measure_tool(sample_tool, arguments, window=window, max_share=max_share)
    for finding in findings:
        print(finding)
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    measured = sum(1 for f in findings if f.severity == "size")
    print(f"{len(tools)} tools checked" + (f", {measured} results measured" if measured else "") + f": {errors} errors, {warnings} warnings")
    return 1 if errors or (args.strict and warnings) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
