"""bandoneon's side of the peer comparison, in the same protocol as the peer scripts:
prints {"median_s": ...} for the 2-turn fake-model run, awaited in a running event loop."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scenarios  # noqa: E402
from _protocol import ANSWER, OBSERVATION, PROMPT, main, median_of, median_of_async  # noqa: E402


def measure(args):
    # the run is scenarios.py's; it must be the same 2-turn scenario the peers run
    assert (scenarios.PROMPT, scenarios.ANSWER) == (PROMPT, ANSWER), (scenarios.PROMPT, scenarios.ANSWER)
    assert scenarios.get_forecast("Paris") == OBSERVATION, scenarios.get_forecast("Paris")
    if args.mode == "new-agent-sync":
        # as subagents, evals, laps and heartbeats use it (and as llm's script does): a new agent
        # with the default plugins for every run, called with run_sync
        def run() -> None:
            result = scenarios.bandoneon_agent(None).run_sync(PROMPT)
            assert result.text == ANSWER, result

        return median_of(run, args.iterations)
    agent = scenarios.bandoneon_agent(None)
    return median_of_async(lambda: scenarios.bandoneon_run(agent), args.iterations)


if __name__ == "__main__":
    main("bandoneon", measure, {"--mode": {"choices": ("reused-agent", "new-agent-sync"), "default": "reused-agent"}})
