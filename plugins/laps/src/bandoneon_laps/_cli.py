"""``bandoneon laps GOAL --until COMMAND --max-laps N``: the goal loop from the shell.

``is_done`` is COMMAND's exit code (0: done), so the check is the world: run the tests,
count the rows. Exit codes: 0 done, 1 not done when the fuse blew, 2 the check failed or
the input was bad.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Any

import bandoneon

from ._loop import LapRecord, run_goal_loop
from .plugin import LAP_INSTRUCTIONS
from ._progress import progress_tools

log = logging.getLogger("bandoneon.laps")

COMMAND_NOT_FOUND = 127


def add_command(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "laps",
        help="run a goal in fresh laps until a command succeeds",
        description="Run GOAL in fresh laps (a new agent each lap) until COMMAND exits 0, or --max-laps laps ran.",
    )
    parser.add_argument("goal", help="the prompt every lap starts from")
    parser.add_argument("--until", required=True, metavar="COMMAND", help="shell command; exit code 0 means the goal is done")
    parser.add_argument("--max-laps", type=int, required=True, metavar="N", help="the fuse, counted across restarts")
    parser.add_argument("--model", default=None, help="model string (default: bandoneon.toml / $BANDONEON_MODEL)")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server, e.g. http://localhost:11434/v1")
    parser.add_argument("--max-turns", type=int, default=None, help="turn limit of each lap")
    parser.add_argument("--progress", default="PROGRESS.md", help="the progress note (default: PROGRESS.md)")
    parser.add_argument("--state", default=".bandoneon/laps.json", help="state file for resuming (default: .bandoneon/laps.json)")
    parser.add_argument("--until-timeout", type=float, default=600.0, metavar="SECONDS", help="how long COMMAND may run (default: 600)")
    parser.set_defaults(handler=handle)


def command_check(command: str, timeout: float) -> Any:
    """An async ``is_done`` that runs ``command`` in a shell: exit 0 is done."""

    async def is_done() -> bool:
        process = await asyncio.create_subprocess_shell(command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        try:
            async with asyncio.timeout(timeout):
                _, stderr = await process.communicate()
        except TimeoutError:
            process.kill()
            await process.wait()
            raise TimeoutError(f"--until command took longer than {timeout:g}s: {command}") from None
        if process.returncode == COMMAND_NOT_FOUND:
            raise FileNotFoundError(f"--until command not found: {command} ({stderr.decode(errors='replace').strip()})")
        return process.returncode == 0

    return is_done


def handle(args: argparse.Namespace) -> int:
    if args.max_laps < 1:
        print(f"bandoneon laps: --max-laps must be at least 1, got {args.max_laps}", file=sys.stderr)
        return 2
    if not args.until.strip():
        print("bandoneon laps: --until needs a command", file=sys.stderr)
        return 2
    if args.until_timeout <= 0:
        print(f"bandoneon laps: --until-timeout must be a positive number of seconds, got {args.until_timeout:g}", file=sys.stderr)
        return 2

    model = bandoneon.model_at(args.model, args.base_url) if args.base_url else args.model

    def make_agent() -> bandoneon.Agent:
        return bandoneon.Agent(model, tools=progress_tools(args.progress), append_system_prompt=LAP_INSTRUCTIONS, max_turns=args.max_turns)

    def on_lap(record: LapRecord) -> None:
        outcome = record.error or (record.text or "").strip().replace("\n", " ")[:200]
        # The model's words, shown and never obeyed by the terminal.
        print(bandoneon.for_terminal(f"lap {record.lap}: {record.stop} · {'done' if record.done else 'not done'} · {outcome}"))

    try:
        result = asyncio.run(run_goal_loop(args.goal, make_agent, command_check(args.until, args.until_timeout), args.max_laps, on_lap, state_file=args.state))
    except bandoneon.ConfigError as exc:
        print(f"bandoneon laps: {exc}", file=sys.stderr)
        return 2
    print(bandoneon.for_terminal(f"{result.stop}: {'done' if result.done else 'not done'} after {result.laps} laps, {result.usage.total_tokens} tokens" + (f" ({result.detail})" if result.detail else "")))
    if result.stop == "is_done_error":
        return 2
    return 0 if result.done else 1
