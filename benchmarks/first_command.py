"""The README's first command, measured as a newcomer meets it; the figures go into RESULTS.md.

    python benchmarks/first_command.py [--rounds N] [--output benchmarks/RESULTS.md]

1. A fresh venv and an empty pip cache (a new ``PIP_CACHE_DIR``; ``PIP_FIND_LINKS`` and
   ``PIP_NO_INDEX`` unset, so every wheel comes from the index): the README's first command,
   run by the shell from the repository root, timed end to end, and the quickstart alone.
2. In that venv, on the default model after it is loaded: a tool-call turn (the quickstart's
   first request, a call forced by the grammar's union), median of ``--rounds``.
3. The harness overhead: the same turn through ``LocalModel.complete`` and through xllamacpp
   directly (``Server.handle_chat_completions`` with the identical request the provider builds,
   streamed the same way), alternating, medians compared.
4. Cancellation: a streamed generation cancelled after its third piece; the time from the
   cancel to the provider call ending (llama.cpp stopped and let go of the model).

Targets (issue #17): first command <= 60 s, quickstart <= 10 s, tool-call turn <= 2 s,
overhead <= 3 %, cancellation <= 0.5 s. The figures depend on how busy the machine is; the load average is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- first-command:start -->", "<!-- first-command:end -->"

#: Run inside the fresh venv: the tool-call turn and the overhead against xllamacpp directly.
TURNS = r'''
import asyncio, json, statistics, sys, time
sys.path.insert(0, "examples")
import bandoneon
from bandoneon import Message, ModelRequest
from bandoneon_local import LocalModel
import quickstart

rounds = int(sys.argv[1])
agent = quickstart.build_agent()
model = LocalModel()
request = ModelRequest((Message.user("What is the forecast for Buenos Aires on 2026-09-26?"),), system_prompt=agent.system_prompt,
                       tools=tuple(t.spec for t in agent.tools.values()), settings={"max_tokens": 96, "temperature": 0.0, "seed": 1})

async def main():
    engine = await model.engine()
    body = model.chat_request(request)
    direct_body = {**engine.constrained(body), "stream": True}

    async def harness():
        started = time.perf_counter()
        reply = await model.complete(request)
        assert reply.message.tool_calls, reply
        return time.perf_counter() - started

    def direct():
        pieces = []
        started = time.perf_counter()
        engine.server.handle_chat_completions(direct_body, lambda chunk: pieces.append(chunk) and False)
        return time.perf_counter() - started

    async def cancelled():
        story = ModelRequest((Message.user("Write a long story about a dragon."),), settings={"max_tokens": 300})
        seen = {}
        async def on_delta(kind, payload):
            seen["pieces"] = seen.get("pieces", 0) + 1
            if seen["pieces"] == 3:
                seen["at"] = time.perf_counter()
                task.cancel()
        task = asyncio.ensure_future(model.complete(story, on_delta=on_delta))
        try:
            await task
        except asyncio.CancelledError:
            pass
        return time.perf_counter() - seen["at"]

    await harness(); direct()  # warm: the prompt is cached for both from here on
    ours, theirs, stops = [], [], []
    for _ in range(rounds):
        ours.append(await harness())
        theirs.append(await asyncio.to_thread(direct))
        stops.append(await cancelled())
    print(json.dumps({"turn": statistics.median(ours), "direct": statistics.median(theirs), "cancel": statistics.median(stops), "cancel_max": max(stops)}))

asyncio.run(main())
'''


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--output", default=str(ROOT / "benchmarks" / "RESULTS.md"))
    args = parser.parse_args(argv)
    command = first_command()
    with tempfile.TemporaryDirectory(prefix="bandoneon-first-") as scratch:
        venv = Path(scratch) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        env = {k: v for k, v in os.environ.items() if k not in ("PIP_FIND_LINKS", "UV_FIND_LINKS", "PIP_NO_INDEX", "VIRTUAL_ENV", "BANDONEON_MODEL", "BANDONEON_BASE_URL")}
        env.update(PIP_CACHE_DIR=str(Path(scratch) / "pip-cache"), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", BANDONEON_PROGRESS="0")
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True)
        total = time.perf_counter() - started
        if done.returncode != 0:
            print(done.stdout, done.stderr, file=sys.stderr)
            return 1
        started = time.perf_counter()
        quick = subprocess.run([str(venv / "bin" / "python"), "examples/quickstart.py"], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
        quickstart = time.perf_counter() - started
        turns = subprocess.run([str(venv / "bin" / "python"), "-c", TURNS, str(args.rounds)], cwd=ROOT, env=env, capture_output=True, text=True)
        if turns.returncode != 0:
            print(turns.stderr, file=sys.stderr)
            return 1
        figures = json.loads(turns.stdout.strip().splitlines()[-1])
        load_after = os.getloadavg()[0]
    overhead = figures["turn"] / figures["direct"] - 1
    section = render(command, total, quickstart, figures, overhead, (load_before, load_after), quick.stdout, args.rounds)
    record(Path(args.output), section)
    print(section)
    return 0


def first_command() -> str:
    """The README's first command, read from the README (so the measurement follows it)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```sh\n(python -m pip install[^\n]*)\n```", readme)
    if match is None:
        raise SystemExit("README.md has no first command in a ```sh block")
    return match.group(1)


def render(command: str, total: float, quickstart: float, figures: dict[str, float], overhead: float, load: tuple[float, float], output: str, rounds: int) -> str:
    def verdict(ok: bool) -> str:
        return "met" if ok else "**missed**"

    machine = f"{os.uname().machine}, {os.cpu_count()} cores, 1-minute load average {load[0]:.1f} before and {load[1]:.1f} after"
    return "\n".join(
        [
            START,
            "## The README's first command on a fresh venv (`python benchmarks/first_command.py`)",
            "",
            f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: {machine}",
            "- a new venv, an empty pip cache, every wheel from PyPI; the command as the README has it:",
            f"  `{command}`",
            "",
            "| what | measured | target | |",
            "|---|---|---|---|",
            f"| the first command, end to end | {total:.1f} s | ≤ 60 s | {verdict(total <= 60)} |",
            f"| of which the quickstart (measured again on its own) | {quickstart:.1f} s | ≤ 10 s | {verdict(quickstart <= 10)} |",
            f"| a tool-call turn on the default model (median of {rounds}, model loaded) | {figures['turn']:.2f} s | ≤ 2 s | {verdict(figures['turn'] <= 2)} |",
            f"| the same turn through xllamacpp directly (same request, same streaming) | {figures['direct']:.2f} s | | |",
            f"| harness overhead on that turn | {overhead * 100:+.1f} % | ≤ 3 % | {verdict(overhead <= 0.03)} |",
            f"| cancelling a streamed generation: cancel to llama.cpp let go (median; worst of {rounds}) | {figures['cancel']:.3f} s; {figures['cancel_max']:.3f} s | ≤ 0.5 s | {verdict(figures['cancel_max'] <= 0.5)} |",
            "",
            "What the quickstart printed:",
            "",
            "```",
            output.strip(),
            "```",
            END,
        ]
    )


def record(path: Path, section: str) -> None:
    """Put ``section`` into RESULTS.md in place of the previous one (or at the end)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if START in text and END in text:
        text = text[: text.index(START)] + section + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
