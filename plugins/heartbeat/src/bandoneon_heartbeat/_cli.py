"""``bandoneon heartbeat CONFIG [--once]``: a heartbeat from a TOML file, state on disk.

Without ``--once`` it ticks in-process until a fuse blows (for systemd ``Restart=``);
with ``--once`` it fires one tick and exits (for cron or a systemd timer: the scheduler is
the clock). Either way the tick count, the first start and the last tick are kept in the
state file, so the fuses hold across restarts and missed ticks are reported.
Exit codes: 0 fine (also when a fuse is blown), 1 the woken run failed, 2 bad config.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import sys
from typing import Any

import attrs

import bandoneon

from ._config import heartbeat_from_config, load_heartbeat_config
from ._heartbeat import TickOutcome


def add_command(subparsers: Any) -> None:
    parser = subparsers.add_parser("heartbeat", help="run a heartbeat from a TOML file", description=__doc__.split("\n\n")[1].replace("``", ""))
    parser.add_argument("config", help="the heartbeat's TOML file")
    parser.add_argument("--once", action="store_true", help="fire one tick and exit (for cron / systemd timers)")
    parser.add_argument("--model", default=None, help="model string, instead of the file's model")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server, e.g. http://localhost:11434/v1")
    parser.set_defaults(handler=handle)


def _print(outcome: TickOutcome) -> None:
    said = (outcome.error or outcome.text or "").strip().replace("\n", " ")[:200]
    # The model's words, shown and never obeyed by the terminal.
    print(bandoneon.for_terminal(f"tick {outcome.tick}: {outcome.outcome}" + (f" ({outcome.stop})" if outcome.stop else "") + (f" · {said}" if said else "")))


def handle(args: argparse.Namespace) -> int:
    try:
        config = load_heartbeat_config(args.config)
        model = args.model or config.model
        if args.base_url:
            model = bandoneon.model_at(model, args.base_url)
        heartbeat = heartbeat_from_config(attrs.evolve(config, model=model), on_tick=_print)
    except bandoneon.ConfigError as exc:
        print(f"bandoneon heartbeat: {exc}", file=sys.stderr)
        return 2
    assert heartbeat.state_file is not None
    lock_path = heartbeat.state_file.with_name(heartbeat.state_file.name + ".lock")
    with open(lock_path, "a+") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            # Another process is running this heartbeat: this tick is dropped, never queued.
            print("tick dropped: this heartbeat is already running in another process")
            return 0
        lock.seek(0)
        lock.truncate()
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        return _run(heartbeat, once=args.once)


def _missed(count: int) -> None:
    """Said once, by the command (the library only logs it at INFO)."""
    if count:
        print(f"{bandoneon.plural(count, 'tick')} {'was' if count == 1 else 'were'} missed while nothing ran")


def _run(heartbeat: Any, *, once: bool) -> int:
    if once:
        outcome = asyncio.run(heartbeat.tick_once())
        _missed(heartbeat.missed_ticks)
        if isinstance(outcome, str):
            print(f"heartbeat finished: {outcome} ({bandoneon.plural(heartbeat.ticks, 'tick')} in all)")
            return 0
        return 1 if outcome.outcome in ("run_error", "run_timeout") else 0
    report = asyncio.run(heartbeat.run())
    _missed(report.missed_ticks)
    here = len(report.outcomes)
    earlier = report.ticks - here
    print(
        f"heartbeat finished: {report.stop} after {bandoneon.plural(report.ticks, 'tick')}"
        + (f" ({earlier} in earlier runs)" if earlier > 0 else "")
        + f"; {report.woken} of this run's {bandoneon.plural(here, 'tick')} woke the model"
    )
    return 0
