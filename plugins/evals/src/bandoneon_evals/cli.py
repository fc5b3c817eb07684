"""``bandoneon eval run`` (CI gate with ``--min-pass-rate``), ``eval compare``, ``eval worker``
and ``eval add-case`` (a recorded run becomes a regression case).

Case ids, errors and what a trace recorded are outside text: printed through
``bandoneon.for_terminal``, so a terminal shows their control characters and obeys none.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

import bandoneon

from . import scorers as builtin
from .cases import add_case, parse_expect
from .celery_backend import CeleryBackend, load_scorers
from .dataset import DatasetError
from .report import ReportError, compare, load_report
from .runner import run_eval

__all__ = ["parse_scorer", "register"]

BUILTIN_PREFIX = "builtin:"


def parse_scorer(spec: str) -> Any:
    """A built-in scorer by name — ``exact``, ``contains``, ``regex``,
    ``trajectory[:exact|ordered|set][:strict]``, ``tool_errors``, ``stop`` — else a
    ``module:attr`` import path."""
    name, _, rest = spec.partition(":")
    if name in ("exact", "contains", "regex", "tool_errors") and not rest:
        return getattr(builtin, name)()
    if name == "stop" and not rest:
        return builtin.stop_reason()
    if name == "trajectory":
        parts = [p for p in rest.split(":") if p]
        mode = parts[0] if parts else "ordered"
        return builtin.trajectory(mode=mode, allow_extras="strict" not in parts[1:])  # type: ignore[arg-type]
    if not rest:
        raise bandoneon.ConfigError(f"unknown scorer {spec!r}; use exact, contains, regex, trajectory[:MODE[:strict]], tool_errors, stop or module:attr")
    return load_scorers(spec)


def scorers_from_specs(specs: str) -> list[Any]:
    """``builtin:exact,trajectory:set`` → scorers (lets Celery workers rebuild CLI scorers)."""
    found: list[Any] = []
    for spec in specs.removeprefix(BUILTIN_PREFIX).split(","):
        value = parse_scorer(spec)
        found.extend(value if isinstance(value, list) else [value])
    return found


def register(subparsers: Any) -> None:
    evals = subparsers.add_parser("eval", help="run evals on a dataset, compare reports, start workers")
    commands = evals.add_subparsers(title="eval commands", metavar="COMMAND")
    evals.set_defaults(handler=lambda _args: _print_help(evals))

    run = commands.add_parser("run", help="run a dataset against an agent and print the scorecard")
    run.add_argument("dataset", help="cases in .jsonl or .toml")
    run.add_argument("--agent", required=True, metavar="MODULE:FACTORY", help="a function returning a fresh Agent (optionally taking the case)")
    run.add_argument("--scorer", action="append", default=[], metavar="SPEC", help="exact, contains, regex, trajectory[:exact|ordered|set][:strict], tool_errors, stop or MODULE:ATTR; repeatable (default: contains)")
    run.add_argument("--repeats", type=int, default=1)
    run.add_argument("--timeout", type=float, help="seconds per case run")
    run.add_argument("--concurrency", type=int, default=4, help="case runs at once in process (with --backend celery, the workers' own --concurrency decides)")
    run.add_argument("--json", metavar="FILE", help="write the report as JSON (for `eval compare`)")
    run.add_argument("--markdown", metavar="FILE")
    run.add_argument("--html", metavar="FILE")
    run.add_argument("--min-pass-rate", type=float, help="exit 1 when the overall pass rate is below this (0-1)")
    run.add_argument("--backend", choices=["inprocess", "celery"], default="inprocess")
    run.add_argument("--broker", default="redis://127.0.0.1:6379/0", help="Celery broker URL (with --backend celery)")
    run.add_argument("--no-progress", action="store_true")
    run.set_defaults(handler=run_command)

    cmp = commands.add_parser("compare", help="list the cases whose pass rate dropped from A to B")
    cmp.add_argument("before")
    cmp.add_argument("after")
    cmp.set_defaults(handler=compare_command)

    worker = commands.add_parser("worker", help="start a Celery worker for --backend celery")
    worker.add_argument("--broker", default="redis://127.0.0.1:6379/0")
    worker.add_argument("--visibility-timeout", type=float, default=3600)
    worker.add_argument("--concurrency", type=int, default=1)
    worker.set_defaults(handler=worker_command)

    add = commands.add_parser("add-case", help="turn a recorded run (a tracing JSONL trace or a saved session) into a dataset case")
    add.add_argument("source", metavar="TRACE", help="a tracing plugin JSONL file, or a sessions plugin JSONL file")
    add.add_argument("--span", metavar="ID", help="the run holding this span (an id or a unique prefix; default: the file's last run)")
    add.add_argument("--to", required=True, metavar="DATASET.jsonl", help="the dataset to append the case to (created if missing)")
    add.add_argument("--expect", action="append", default=[], metavar="KEY=VALUE", help="what a good run looks like: tool_errors=0, stop=end_turn, contains=TEXT, tools=a,b; repeatable")
    add.add_argument("--id", dest="case_id", help="the case id (default: from the run's span id or the session id)")
    add.add_argument("--tag", action="append", dest="tags", metavar="TAG", help="tags (default: regression); repeatable")
    add.set_defaults(handler=add_case_command)


def _print_help(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 1


def run_command(args: argparse.Namespace) -> int:
    if args.min_pass_rate is not None and not 0 <= args.min_pass_rate <= 1:
        print(f"bandoneon eval: --min-pass-rate must be between 0 and 1, got {args.min_pass_rate}", file=sys.stderr)
        return 2
    specs = args.scorer or ["contains"]
    try:
        make_agent = bandoneon.import_object(args.agent, what="--agent")
        scorers = scorers_from_specs(",".join(specs))
        backend = None
        if args.backend == "celery":
            backend = CeleryBackend(args.broker, make_agent=args.agent, scorers=celery_scorers_path(specs))
            # Celery waits quietly for workers; say where the cases go, so an empty cluster is not a mystery.
            print(f"bandoneon eval: case runs go to the queue on {args.broker}; they run once workers are up (bandoneon eval worker --broker {args.broker})", file=sys.stderr)
        report = asyncio.run(
            run_eval(
                args.dataset,
                make_agent,
                scorers,
                repeats=args.repeats,
                timeout=args.timeout,
                concurrency=args.concurrency,
                progress=False if args.no_progress else None,
                backend=backend,
                name=Path(args.dataset).stem,
            )
        )
    except DatasetError as exc:
        print(bandoneon.for_terminal(f"bandoneon eval: {exc}"), file=sys.stderr)
        return 2
    sys.stdout.write(report.table())
    if args.json:
        report.write_json(args.json)
    if args.markdown:
        bandoneon.write_atomically(args.markdown, report.markdown())
    if args.html:
        bandoneon.write_atomically(args.html, report.html())
    if args.min_pass_rate is not None and report.pass_rate < args.min_pass_rate:
        print(f"bandoneon eval: pass rate {report.pass_rate:.1%} is below --min-pass-rate {args.min_pass_rate:.1%}", file=sys.stderr)
        return 1
    return 0


BUILTIN_NAMES = ("exact", "contains", "regex", "trajectory", "tool_errors", "stop")


def _is_import_path(spec: str) -> bool:
    return ":" in spec and spec.split(":")[0] not in BUILTIN_NAMES


def celery_scorers_path(specs: list[str]) -> str:
    """An import path a Celery worker can load the scorers from.

    One ``module:attr`` is passed as is; built-in specs become the name of a function of this
    module (``_specs__exact__trajectory_x_set``) that ``__getattr__`` rebuilds on the worker.
    """
    if len(specs) == 1 and _is_import_path(specs[0]):
        return specs[0]
    if any(_is_import_path(s) for s in specs):
        raise bandoneon.ConfigError("with --backend celery, give either built-in scorers or one MODULE:ATTR returning every scorer")
    return "bandoneon_evals.cli:_specs__" + "__".join(s.replace(":", "_x_") for s in specs)


def __getattr__(name: str) -> Any:
    if name.startswith("_specs__"):
        specs = [s.replace("_x_", ":") for s in name.removeprefix("_specs__").split("__")]
        return lambda: scorers_from_specs(",".join(specs))
    raise AttributeError(name)


def compare_command(args: argparse.Namespace) -> int:
    try:
        before, after = load_report(args.before), load_report(args.after)
    except ReportError as exc:
        print(bandoneon.for_terminal(f"bandoneon eval compare: {exc}"), file=sys.stderr)
        return 2
    regressed, improved = compare(before, after)
    old_rate, new_rate = before.get("totals", {}).get("pass_rate"), after.get("totals", {}).get("pass_rate")
    if old_rate is not None and new_rate is not None:
        print(f"pass rate {old_rate:.0%} -> {new_rate:.0%}")
    for title, items in (("regressed", regressed), ("improved", improved)):
        if items:
            print(f"{title}:")
            for item in items:
                print(bandoneon.for_terminal(f"  {item}"))
    if not regressed:
        print("no case regressed")
    return 1 if regressed else 0


def worker_command(args: argparse.Namespace) -> int:
    from .celery_backend import make_app

    app = make_app(args.broker, visibility_timeout=args.visibility_timeout)
    app.worker_main(["worker", "--loglevel", "INFO", "--concurrency", str(args.concurrency), "-Q", "bandoneon_evals"])
    return 0


def add_case_command(args: argparse.Namespace) -> int:
    try:
        case = add_case(args.source, args.to, span=args.span, expect=parse_expect(args.expect), case_id=args.case_id, tags=args.tags or ("regression",))
    except DatasetError as exc:
        print(bandoneon.for_terminal(f"bandoneon eval add-case: {exc}"), file=sys.stderr)
        return 2
    outcome = case.metadata["outcome"]
    print(bandoneon.for_terminal(f"added case {case.id!r} to {args.to}: {len(case.metadata['replies'])} recorded replies, tools {', '.join(case.metadata['tools']) or '(none)'}; the run ended with {outcome['stop'] or 'an unknown stop'}"))
    for warning in case.metadata.get("replay_warnings", ()):
        print(bandoneon.for_terminal(f"  warning: {warning}; a replay may differ from the run"), file=sys.stderr)
    if case.expected is None:
        print("  no --expect given: say what a good run looks like (e.g. --expect tool_errors=0) before the case can pass or fail", file=sys.stderr)
    return 0
