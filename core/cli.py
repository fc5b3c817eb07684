"""The ``bandoneon`` command: run, chat, plugins, init, tools check, and plugins' own commands.

Exit codes of ``run``: 0 when the run ended with an answer, 2 when it ended without one
(the reason on stderr), 1 on an error. A command that has commands of its own (``eval``,
``memory``, a plugin's) prints its help when called alone.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import logging
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .errors import BandoneonError
from .providers.base import OPENAI_PREFIXES, model_at
from .text import for_terminal, json_for_terminal, plural

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    if not _standard_streams_usable():
        return 1
    warnings.formatwarning = _one_line_warning
    _show_logs_on_stderr()
    try:
        parser = build_parser()  # plugins add their commands here
    except BandoneonError as exc:
        print(f"bandoneon: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C while the plugins load: nothing has started yet
        print("interrupted", file=sys.stderr)
        return 130
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 1
    try:
        return int(handler(args) or 0)
    except BandoneonError as exc:  # its message may quote a server's reply or a file
        print(for_terminal(f"bandoneon: {exc}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # run_sync has cancelled the run: the model stopped, the history is valid
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `bandoneon plugins | head`: the reader left; say nothing more (Python's own recipe).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _standard_streams_usable() -> bool:
    """A stream the shell closed (``<&-``, ``2>&-``) reads as empty or writes to nowhere, as
    /dev/null does. A closed stdout (``>&-``) is refused at once: what a command prints, an
    answer above all, would be lost while the exit code said it was done."""
    if sys.stdin is None:  # opened for the rest of the process, as the standard streams are
        sys.stdin = open(os.devnull, encoding="utf-8")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")
    if sys.stdout is None:
        print("bandoneon: standard output is closed; send it to a file or to /dev/null", file=sys.stderr)
        return False
    return True


def _one_line_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> str:
    return for_terminal(f"bandoneon: {category.__name__}: {message}") + "\n"


class _ShownOnStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A log line for a person on whatever ``sys.stderr`` is when it is written (as Python's
    last-resort handler does): what it quotes (a tool's error, a server's reply, a traceback of
    either) is shown, never obeyed (``for_terminal``)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:  # StreamHandler.__init__ sets it; sys.stderr is read instead
        pass

    def format(self, record: logging.LogRecord) -> str:
        return for_terminal(super().format(record))


def _show_logs_on_stderr() -> None:
    """Warnings and errors of bandoneon and its plugins on stderr, as Python's last-resort
    handler would print them (the message, then any traceback), but shown rather than obeyed.
    Once per process; an application that configured the ``bandoneon`` logger keeps its own."""
    logger = logging.getLogger("bandoneon")
    if logger.handlers:
        return
    handler = _ShownOnStderr()
    handler.setLevel(logging.WARNING)
    logger.addHandler(handler)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bandoneon", description="An async agent harness built from plugins.")
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    run = commands.add_parser("run", help="run an agent on one prompt and print the answer")
    run.add_argument("prompt")
    _agent_options(run)
    run.add_argument("--json", action="store_true", help="print the RunResult as JSON")
    run.set_defaults(handler=_run)

    chat = commands.add_parser(
        "chat",
        help="talk with an agent; the reply streams, Ctrl-C stops it",
        description="Talk with an agent. The reply streams in; each tool call is one dim line. Ctrl-C stops a reply, "
        "Ctrl-C or Ctrl-D at the prompt leaves. Commands: /help, /clear, /save [FILE], /model [MODEL].",
    )
    _agent_options(chat)
    chat.add_argument("--session", help="keep the conversation under this session id (needs bandoneon-sessions)")
    chat.add_argument("--session-path", help="where sessions are kept (a folder for JSONL, or a .sqlite3 file)")
    chat.set_defaults(handler=_chat)

    plugins = commands.add_parser(
        "plugins",
        help="list installed plugins and what an Agent() here gets from each",
        description="Every installed plugin: its distribution and version, its state for an Agent() built in this folder "
        "(active (default), active (bandoneon.toml), policy pack, installed, disabled (env), broken), the time its import "
        "took, and the hooks it implements.",
    )
    plugins.add_argument("--json", action="store_true", help="print the listing as JSON, for scripts")
    plugins.add_argument("--config", help="path to bandoneon.toml (default: ./bandoneon.toml or $BANDONEON_CONFIG)")
    plugins.add_argument("--profile", metavar="PROMPT", help="run PROMPT once with a scripted model and print each plugin's total hook time")
    plugins.add_argument("--with", dest="also", action="append", default=[], metavar="NAME", help="with --profile: also activate this plugin (repeatable)")
    plugins.set_defaults(handler=_plugins)

    init = commands.add_parser("init", help="write a commented bandoneon.toml here")
    init.add_argument("--model", default="local:", help="the model line to write (default: local:)")
    init.add_argument("--path", default="bandoneon.toml", help="where to write it (default: ./bandoneon.toml)")
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
    _help_when_called_alone(commands)
    return parser


def _version() -> str:
    from . import __version__

    return f"bandoneon {__version__} (Python {sys.version.split()[0]})"


def _help_when_called_alone(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``bandoneon memory`` alone prints memory's help, as ``bandoneon eval`` does: for every
    command with commands of its own, the plugins' included, instead of an argparse error."""
    for command in commands.choices.values():
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                action.required = False
                if command.get_default("handler") is None:
                    command.set_defaults(handler=lambda _args, command=command: _help(command))


def _agent_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="PROVIDER:MODEL, e.g. local: or ollama:llama3.1")
    parser.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://localhost:11434/v1")
    parser.add_argument("--max-turns", type=int)
    parser.add_argument("--system", help="system prompt")
    parser.add_argument("--tools", help="MODULE[:ATTR] whose tools the agent gets")
    parser.add_argument("--config", help="path to bandoneon.toml")


def _make_agent(args: argparse.Namespace, **extra: Any) -> Any:
    from .agent import Agent
    from .errors import ConfigError

    tools = load_tools(args.tools) if args.tools else []
    if args.tools and not tools:  # plain functions are tools only when named: an agent without them would run anyway
        raise ConfigError(f"no tools found in {args.tools!r}: mark them with @bandoneon.tool, or name one with MODULE:ATTR")
    return Agent(_model(args), tools=tools, system_prompt=args.system, max_turns=args.max_turns, config=args.config, **extra)


def _model(args: argparse.Namespace) -> str | None:
    """``--model`` (a bare name at the configured server); with ``--base-url``, the model at
    that address: ``--model``, else the OpenAI-style model ``bandoneon.toml`` or
    ``$BANDONEON_MODEL`` names, else the server's default. ``--base-url`` moves the model, never
    renames it: an address the model string carries (``MODEL@URL``) is replaced."""
    model: str | None = args.model
    if not args.base_url:
        return _bare_at_configured_server(model, args.config) if model else None
    model = model or _configured_model(args.config)
    if model and model.partition(":")[0] in OPENAI_PREFIXES:
        model = model.rpartition("@")[0] or model  # as the provider reads it: the address follows the last @
    return model_at(model, args.base_url)


def _bare_at_configured_server(model: str, config: str | None) -> str:
    """A bare ``--model NAME`` is a model of the configured server, as ``$BANDONEON_MODEL=NAME``
    is (``base_url`` in ``bandoneon.toml``, else ``$BANDONEON_BASE_URL``); without one it stays
    bare, and the agent says it needs a provider. A model with a prefix names its own server."""
    from .config import configured_base_url, load_config

    if ":" in model:
        return model
    base_url = configured_base_url(load_config(config))
    return model_at(model, base_url) if base_url else model


def _configured_model(config: str | None) -> str | None:
    """The model ``bandoneon.toml`` (or else ``$BANDONEON_MODEL``) names, when ``--base-url`` can
    serve it: a bare name or an OpenAI-style one. Another provider's (``local:``) is not moved."""
    from .config import configured_model, load_config

    model = configured_model(load_config(config))
    prefix, has_prefix, _ = (model or "").partition(":")
    return model if model and (not has_prefix or prefix in OPENAI_PREFIXES) else None


def _run(args: argparse.Namespace) -> int:
    if args.json:  # machine-read output: no progress spinner from the embedded model either
        os.environ["BANDONEON_PROGRESS"] = "0"
    agent = _make_agent(args)
    result = agent.run_sync(args.prompt)
    if args.json:
        print(_json_to_show(result_as_json(result), indent=2))
    elif result.text:
        # On a terminal the answer is shown, never obeyed; piped, it is the data itself.
        print(for_terminal(result.text) if sys.stdout.isatty() else result.text)
    elif result.answer is not None:
        from .structuring import unstructure

        # A terminal tool's arguments as structured for it: a class parameter becomes an object again.
        print(_json_to_show(unstructure(result.answer), default=str))
    if not result.ok:
        print(for_terminal(f"bandoneon: the run ended without an answer: {result.stop}" + (f" ({result.detail})" if result.detail else "")), file=sys.stderr)
        return 2
    return 0


def _json_to_show(value: Any, **options: Any) -> str:
    """``value`` as JSON for stdout: on a terminal with every character it would obey escaped
    (``json_for_terminal``: the same JSON); piped, the text as it came."""
    text = json.dumps(value, ensure_ascii=False, **options)
    return json_for_terminal(text) if sys.stdout.isatty() else text


def result_as_json(result: Any) -> dict[str, Any]:
    from .structuring import unstructure

    return {
        "stop": result.stop,
        "ok": result.ok,
        "text": result.text,
        "answer": unstructure(result.answer),  # a class instance in it (a dataclass parameter) was not JSON
        "turns": result.turns,
        "detail": result.detail,
        "usage": unstructure(result.usage),
        "messages": unstructure(list(result.messages)),
        "run_id": result.run_id,
    }


def _chat(args: argparse.Namespace) -> int:
    from .chat import Chat
    from .errors import ConfigError

    plugins = None
    if args.session_path and not args.session:  # a chat the user meant to keep would be lost
        raise ConfigError(f"--session-path needs --session ID (the conversation to keep in {args.session_path})")
    if args.session:
        from .config import load_config
        from .hooks import registration_hooks
        from .plugins import configured_plugins

        keeper = registration_hooks().session_plugin(session_id=args.session, path=args.session_path)
        if keeper is None:
            print("bandoneon: --session needs a plugin that keeps sessions: pip install bandoneon-sessions", file=sys.stderr)
            return 1
        config = load_config(args.config)
        plugins = [*configured_plugins(config.plugins, source=config.source), keeper]
    outcomes = _Outcomes()
    switch_model = functools.partial(_switch_model, base_url=args.base_url, config=args.config, watch=outcomes.watch)
    code = Chat(outcomes.watch(_make_agent(args, plugins=plugins)), switch_model=switch_model).run()
    # Messages from a pipe or a file come from a script, which has only the exit code to read.
    return outcomes.code if code == 0 and not sys.stdin.isatty() else code


class _Outcomes:
    """How a chat's runs ended, as ``run``'s exit code says it for one: 1 when any raised an
    error, else 2 when any ended without an answer (a limit, a stopped reply), else 0."""

    def __init__(self) -> None:
        self.code = 0

    def watch(self, agent: Any) -> Any:
        agent.on("run_end", self._heard)
        return agent

    def _heard(self, event: Any) -> None:
        if event.error is not None:
            self.code = 1
        elif event.reason not in ("end_turn", "terminal_tool") and self.code == 0:
            self.code = 2


def _switch_model(agent: Any, model: str, *, base_url: str | None, config: str | None, watch: Callable[[Any], Any]) -> Any:
    """``/model MODEL``: the same agent on another model, with the conversation so far; a
    chat started with ``--base-url`` finds MODEL on that server unless it names its own address,
    and a bare name is looked for where ``--model`` looks for it.

    The model string is checked first, so a typo changes nothing; the old agent is closed
    before the new one is made, so a session it holds (``--session``) passes to the new one.
    """
    from .providers.base import resolve_model

    if base_url and "@" not in model:
        model = model_at(model, base_url)
    else:
        model = _bare_at_configured_server(model, config)
    resolve_model(model)
    agent.close()
    return watch(agent.fork(model=model))


def _plugins(args: argparse.Namespace) -> int:
    if args.profile is not None:
        return _profile(args)
    from .config import load_config
    from .listing import format_table, plugin_rows
    from .plugins import configured_plugins

    config = load_config(args.config)
    rows = plugin_rows(config)
    if args.json:
        print(json.dumps([row.to_json() for row in rows], indent=2))
    elif not rows:
        print("no plugins installed (pip install bandoneon-<name>; see the README's plugin table)")
    else:
        print(for_terminal(format_table(rows)))  # a broken plugin's reason quotes its error
    # After the listing, what an Agent() here would refuse ([plugins.*] naming a plugin that is
    # not there, an option's typo): a ConfigError, one line and exit 1.
    configured_plugins(config.plugins, source=config.source)
    return 0


def _profile(args: argparse.Namespace) -> int:
    from .profiling import profile_plugins

    profile = profile_plugins(args.profile, also=args.also, config=args.config)
    print(f"hook time per plugin, one scripted run (2 turns, 1 tool call) of {args.profile!r}:")
    sys.stdout.write(profile.table() if profile.totals else "no active plugin implements a hook the run calls\n")
    return 0


def _init(args: argparse.Namespace) -> int:
    from .config import write_default_config

    path = Path(args.path)
    if path.exists():
        print(f"bandoneon: {path} already exists; not overwriting it (edit it, or write a new one elsewhere with --path FILE)", file=sys.stderr)
        return 1
    try:
        write_default_config(path, model=args.model)
    except OSError as exc:
        print(for_terminal(f"bandoneon: cannot write {path}: {exc.strerror or exc}"), file=sys.stderr)
        return 1
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
        print(for_terminal(str(finding)))  # a finding may quote a tool's docstring or output
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    measured = sum(1 for f in findings if f.severity == "size")
    print(
        f"{plural(len(tools), 'tool')} checked"
        + (f", {plural(measured, 'result')} measured" if measured else "")
        + f": {plural(errors, 'error')}, {plural(warnings, 'warning')}"
    )
    return 1 if errors or (args.strict and warnings) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
