"""``bandoneon sessions list|show|delete|fork``.

What they print from a session (a model's words, a tool's output, whatever is in the file) goes
through ``bandoneon.for_terminal``: a person sees its control characters written out, and their
terminal never obeys them.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import bandoneon

from .records import SessionError
from .stores import default_sessions_path, open_store

__all__ = ["add_commands"]


def add_commands(subparsers: Any) -> None:
    parser = subparsers.add_parser("sessions", help="list, show, delete or fork saved sessions")
    commands = parser.add_subparsers(dest="sessions_command", required=True)

    def where(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--path", help=f"a JSONL folder or a .sqlite3 file (default: {default_sessions_path()})")

    listing = commands.add_parser("list", help="every saved session")
    where(listing)
    listing.set_defaults(handler=list_command)

    show = commands.add_parser("show", help="the messages of a session, numbered")
    show.add_argument("session_id")
    where(show)
    show.set_defaults(handler=show_command)

    delete = commands.add_parser("delete", help="delete a session (refused while it is open)")
    delete.add_argument("session_id")
    where(delete)
    delete.set_defaults(handler=delete_command)

    fork = commands.add_parser("fork", help="branch a session into a new one")
    fork.add_argument("session_id")
    fork.add_argument("new_id")
    fork.add_argument("--at", type=int, help="keep the first AT messages (default: all)")
    where(fork)
    fork.set_defaults(handler=fork_command)


def _fail(message: str) -> int:
    print(bandoneon.for_terminal(f"bandoneon sessions: {message}"), file=sys.stderr)
    return 2


def list_command(args: argparse.Namespace) -> int:
    try:
        sessions = open_store(args.path).list()
    except SessionError as exc:
        return _fail(str(exc))
    for session in sessions:
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(session.created_at)) if session.created_at else "?"
        origin = f"\tforked from {session.forked_from}" if session.forked_from else ""
        damage = "\tDAMAGED" if session.damage else ""
        print(bandoneon.for_terminal(f"{session.session_id}\t{created}\t{len(session.messages)} messages\t{session.usage.total_tokens} tokens{origin}{damage}"))
    if not sessions:
        print("no saved sessions")
    return 0


def show_command(args: argparse.Namespace) -> int:
    try:
        session = open_store(args.path).load(args.session_id)
    except SessionError as exc:
        return _fail(str(exc))
    if not session.exists and not session.damage:
        return _fail(f"there is no session {args.session_id!r}")
    for number, message in enumerate(session.messages):
        calls = "".join(f" -> {c.name}({c.arguments})" for c in message.tool_calls)
        print(bandoneon.for_terminal(f"{number}\t{message.role}\t{message.content}{calls}"))
    print(f"usage: {session.usage.input_tokens} in, {session.usage.output_tokens} out, {session.usage.requests} requests")
    if session.damage:
        print(bandoneon.for_terminal(f"damage: {session.damage}"), file=sys.stderr)
    return 0


def delete_command(args: argparse.Namespace) -> int:
    try:
        open_store(args.path).delete(args.session_id)
    except SessionError as exc:
        return _fail(str(exc))
    print(f"deleted {args.session_id}")
    return 0


def fork_command(args: argparse.Namespace) -> int:
    try:
        branch = open_store(args.path).fork(args.session_id, args.new_id, at=args.at)
    except SessionError as exc:
        return _fail(str(exc))
    print(f"forked {args.session_id} into {args.new_id} ({len(branch.messages)} messages)")
    return 0
