"""What hook timing costs: the 2-turn run with the default plugins, timing off (the default)
against ``hook_timeout``, ``agent.profile_hooks()`` and tracing's ``hook_timing``.

    python benchmarks/hook_timing_bench.py [--quick]

Contenders alternate round by round in one process (``timing.compare_async``); the figures are
ratios to the run with timing off, so a busy machine moves both sides.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("BANDONEON_DISABLED_PLUGINS", "policy-example")

import bandoneon  # noqa: E402
import scenarios  # noqa: E402
from timing import compare_async  # noqa: E402

OFF = "default plugins, timing off"


def _agent(**options: object) -> bandoneon.Agent:
    return bandoneon.Agent(scenarios.TwoTurnModel(), tools=[scenarios.FORECAST_TOOL], context_files=False, **options)  # type: ignore[arg-type]


async def main(quick: bool) -> None:
    profiled = _agent()
    profiled.profile_hooks()
    contenders = {
        OFF: _agent(),
        "default plugins, hook_timeout=30": _agent(hook_timeout=30),
        "default plugins, profile_hooks()": profiled,
    }
    if "tracing" in bandoneon.installed_plugins():
        defaults = [bandoneon.plugin_name(p) for p in _agent().plugins]
        contenders["defaults + tracing"] = _agent(plugins=[*defaults, "tracing"])
        timed_tracing = bandoneon.build_plugin(bandoneon.load_plugin("tracing"), {"hook_timing": True})
        contenders["defaults + tracing(hook_timing=True)"] = _agent(plugins=[*defaults, timed_tracing])
    comparison = await compare_async(
        {name: (lambda agent=agent: scenarios.bandoneon_run(agent)) for name, agent in contenders.items()},
        iterations=100 if quick else 300,
        rounds=3 if quick else 7,
        warmup=20 if quick else 50,
    )
    print("| run | median | ratio to timing off |\n|---|---|---|")
    for name, median in comparison.medians().items():
        print(f"| {name} | {median * 1e6:.1f} µs | {comparison.ratio(name, OFF):.2f}× |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
