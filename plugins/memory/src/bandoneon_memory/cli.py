"""``bandoneon memory list|forget``: people can see and delete what is stored about them.

The model writes notes (its ``remember`` tool), so a planted prompt can put terminal escapes in
them: note text, scopes and model names are printed through ``bandoneon.for_terminal``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import bandoneon

from .notes_file import NotesFile
from .store import SqliteStore, check_scope, default_memory_path

__all__ = ["add_commands"]


def add_commands(subparsers: Any) -> None:
    parser = subparsers.add_parser("memory", help="list or delete saved memory notes")
    commands = parser.add_subparsers(dest="memory_command", required=True)

    def where(sub: argparse.ArgumentParser) -> None:
        group = sub.add_mutually_exclusive_group()
        group.add_argument("--db", help=f"the SQLite store (default: {default_memory_path()})")
        group.add_argument("--notes", metavar="FOLDER", help="a notes folder (mode 'notes') instead of the SQLite store")

    listing = commands.add_parser("list", help="the notes of a scope, or every scope with its count")
    listing.add_argument("--scope", help="whose notes (without it: the scopes and how many notes each has)")
    where(listing)
    listing.set_defaults(handler=list_command)

    forget = commands.add_parser("forget", help="delete notes of a scope")
    forget.add_argument("--scope", required=True)
    forget.add_argument("ids", nargs="*", help="note ids (SQLite) or note numbers (notes folder)")
    forget.add_argument("--all", action="store_true", help="delete every note of the scope")
    where(forget)
    forget.set_defaults(handler=forget_command)


def _store_exists(db: str | None) -> bool:
    return Path(db or default_memory_path()).expanduser().exists()


def _fail(message: str) -> int:
    print(bandoneon.for_terminal(f"bandoneon memory: {message}"), file=sys.stderr)
    return 2


def list_command(args: argparse.Namespace) -> int:
    try:
        if args.notes:
            if not args.scope:
                return _fail("--notes needs --scope")
            notes = NotesFile(args.notes, args.scope).read()
            for number, (date, text) in enumerate(notes, 1):
                print(bandoneon.for_terminal(f"{number}\t{date or '-'}\t{text}"))
            if not notes:
                print(f"no notes for scope {args.scope!r}")
            return 0
        if args.scope:
            check_scope(args.scope)
        if not _store_exists(args.db):  # reading must not create an empty database where none was
            print(f"no memory store at {args.db or default_memory_path()} (nothing has been remembered there yet)")
            return 0
        store = SqliteStore(args.db)
        if not args.scope:
            scopes = store.scopes_sync()
            for scope, count in scopes:
                print(bandoneon.for_terminal(f"{scope}\t{bandoneon.plural(count, 'note')}"))
            if not scopes:
                print(f"no notes in {store.path}")
            return 0
        saved = store.list_sync(args.scope)
        for note in saved:
            print(bandoneon.for_terminal(f"{note.id}\t{note.date}\t{note.model or 'not embedded yet'}\t{note.text}"))
        if not saved:
            print(f"no notes for scope {args.scope!r}")
        return 0
    except bandoneon.ConfigError as exc:
        return _fail(str(exc))


def forget_command(args: argparse.Namespace) -> int:
    if bool(args.ids) == bool(args.all):
        return _fail("name the notes to delete, or pass --all (not both)")
    try:
        if args.notes:
            notes_file = NotesFile(args.notes, args.scope)
            numbers = sorted({int(i) for i in (args.ids or range(1, len(notes_file.read()) + 1))}, reverse=True)
            for number in numbers:  # highest first, so the numbers of the others do not move
                print(bandoneon.for_terminal(f"forgot: {notes_file.forget(number)}"))
            return 0
        if not _store_exists(args.db):
            return _fail(f"no memory store at {args.db or default_memory_path()}: nothing to forget")
        store = SqliteStore(args.db)
        if args.all:
            print(f"forgot {bandoneon.plural(store.forget_all_sync(args.scope), 'note')} of scope {args.scope!r}")
            return 0
        missing = [note_id for note_id in args.ids if not store.forget_sync(args.scope, note_id)]
        for note_id in args.ids:
            if note_id not in missing:
                print(f"forgot {note_id}")
        if missing:
            return _fail(f"no note {', '.join(missing)} in scope {args.scope!r} (see `bandoneon memory list --scope {args.scope}`)")
        return 0
    except (bandoneon.ConfigError, IndexError, ValueError) as exc:
        return _fail(str(exc))
