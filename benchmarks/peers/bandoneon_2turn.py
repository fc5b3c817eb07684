"""bandoneon's side of the peer comparison, in the same protocol as the peer scripts:
prints {"median_s": ...} for the 2-turn fake-model run, awaited in a running event loop."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scenarios  # noqa: E402
from _protocol import ANSWER, OBSERVATION, PROMPT, main, median_of_async  # noqa: E402


async def measure(args) -> float:
    # the run is scenarios.py's; it must be the same 2-turn scenario the peers run
    assert (scenarios.PROMPT, scenarios.ANSWER) == (PROMPT, ANSWER), (scenarios.PROMPT, scenarios.ANSWER)
    assert scenarios.get_forecast("Paris") == OBSERVATION, scenarios.get_forecast("Paris")
    agent = scenarios.bandoneon_agent(None)
    return await median_of_async(lambda: scenarios.bandoneon_run(agent), args.iterations)


if __name__ == "__main__":
    main("bandoneon", measure)
