"""bandoneon's benchmark suite: one command, results in benchmarks/RESULTS.md.

    python benchmarks/run.py            # everything (peers installed into benchmarks/.peers/venv)
    python benchmarks/run.py --quick    # fewer rounds, for a smoke check
    python benchmarks/run.py --only loop,startup

Every figure is a median after warm-up; every comparison is a ratio measured side by side in the
same run, contenders alternating round by round.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import importlib.metadata
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# The example enterprise policy pack (railway rules) would be active in every agent: it is not
# part of "the default plugins". Operators switch it off the same way.
os.environ.setdefault("BANDONEON_DISABLED_PLUGINS", "policy-example")

import sections  # noqa: E402  (benchmarks/ is not a package)

SECTIONS = {
    "loop": sections.loop_overhead,
    "limits": sections.json_limits,
    "sessions": sections.sessions_durability,
    "output": sections.typed_output,
    "peers": sections.peers,
    "http": sections.over_http,
    "concurrency": sections.concurrency,
    "startup": sections.startup,
    "compaction": sections.compaction,
    "streaming": sections.streaming,
    "memory": sections.memory,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer iterations and rounds")
    parser.add_argument("--only", help="comma-separated sections: " + ", ".join(SECTIONS))
    parser.add_argument("--output", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    chosen = args.only.split(",") if args.only else list(SECTIONS)
    scale = sections.Scale.quick() if args.quick else sections.Scale.full()
    started = time.time()
    parts = [_header(args, argv)]
    for name in chosen:
        print(f"== {name}", file=sys.stderr, flush=True)
        parts.append(asyncio.run(_section(SECTIONS[name], scale)) if asyncio.iscoroutinefunction(SECTIONS[name]) else SECTIONS[name](scale))
    parts.append(f"\n_Suite wall time: {time.time() - started:.0f} s._\n")
    text = "\n".join(parts) + _kept_section(Path(args.output))
    Path(args.output).write_text(text, encoding="utf-8")
    print(text)
    return 0


def _kept_section(path: Path) -> str:
    """The first-command section (written by first_command.py, a slower, separate run), kept."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    start, end = "<!-- first-command:start -->", "<!-- first-command:end -->"
    if start not in old or end not in old:
        return ""
    return "\n" + old[old.index(start) : old.index(end) + len(end)] + "\n"


async def _section(fn, scale):
    return await fn(scale)


def _header(args: argparse.Namespace, argv: list[str] | None) -> str:
    versions = ", ".join(f"{name} {_version(name)}" for name in ("bandoneon", "pluggy", "httpx", "attrs", "cattrs"))
    command = "python benchmarks/run.py " + " ".join(argv if argv is not None else sys.argv[1:])
    return (
        "# bandoneon benchmarks\n\n"
        f"- command: `{command.strip()}`\n"
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC\n"
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}\n"
        f"- python: {platform.python_version()}; {versions}\n"
        "- method: medians after warm-up; ratios measured side by side, contenders alternating each round\n"
    )


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
