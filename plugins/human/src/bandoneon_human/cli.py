"""``bandoneon human``: see and answer a paused approval from any shell.

The pending file holds the model's call as it asked for it; what is printed from it goes
through ``bandoneon.for_terminal``, so the person sees the call's real arguments and their
terminal obeys none of its characters. ``human show`` piped (to ``jq``, say) prints the JSON as
it is: there it is data, and written-out C1 controls would not be JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import attrs

import bandoneon

from .pending import answer_pending, read_pending

__all__ = ["add_human_command", "answer_command", "show_command"]


def add_human_command(subparsers: Any) -> None:
    human = subparsers.add_parser("human", help="paused approvals: show one, answer it")
    commands = human.add_subparsers(dest="human_command")
    show = commands.add_parser("show", help="print the pending approval in FILE")
    show.add_argument("file")
    show.set_defaults(handler=show_command)
    answer = commands.add_parser("answer", help="answer the pending approval in FILE; the next run resumes with it")
    answer.add_argument("file")
    choice = answer.add_mutually_exclusive_group(required=True)
    choice.add_argument("--yes", dest="approved", action="store_true", help="approve the call")
    choice.add_argument("--no", dest="approved", action="store_false", help="refuse the call")
    answer.add_argument("--by", default="", help="who answers (for the audit log)")
    answer.add_argument("--note", default="", help="a note the model reads")
    answer.set_defaults(handler=answer_command)
    human.set_defaults(handler=lambda args: (human.print_help(sys.stderr), 2)[1])


def show_command(args: argparse.Namespace) -> int:
    try:
        pending = read_pending(args.file)
    except bandoneon.ConfigError as exc:
        print(bandoneon.for_terminal(f"bandoneon human show: {exc}"), file=sys.stderr)
        return 2
    if pending is None:
        print(f"bandoneon human show: {args.file}: no pending approval", file=sys.stderr)
        return 1
    shown = json.dumps(attrs.asdict(pending), ensure_ascii=False, indent=2)
    print(bandoneon.for_terminal(shown) if sys.stdout.isatty() else shown)
    return 0


def answer_command(args: argparse.Namespace) -> int:
    try:
        pending = answer_pending(args.file, args.approved, by=args.by, note=args.note)
    except bandoneon.ConfigError as exc:
        print(bandoneon.for_terminal(f"bandoneon human answer: {exc}"), file=sys.stderr)
        return 2
    print(bandoneon.for_terminal(f"{'approved' if args.approved else 'refused'}: {pending.shown}"))
    return 0
