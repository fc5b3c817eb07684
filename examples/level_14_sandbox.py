"""Level 14, the bunker: the agent computes by writing Python that runs in a sandbox.

Fort Milonga's steward must know how many days the granary lasts. It does not guess: it
writes a small program that reads the granary's records and does the sums. The program runs
in a box (bandoneon-sandbox, bubblewrap): no network, no secrets, no files of this machine
except the records folder, mounted read-only at /data. What blows up in there stays in there.

Needs bubblewrap: `apt-get install bubblewrap`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import bandoneon
from bandoneon_sandbox import Sandbox

GRANARY = """\
store,sacks,sacks_per_day
north tower,120,6
river gate,45,3
old keep,80,5
"""


def build_agent(model=None, records: str | Path | None = None) -> bandoneon.Agent:
    """The steward, with run_code; ``records`` is the folder the box may read (at /data)."""
    return bandoneon.Agent(
        model,
        system_prompt=(
            "You are the steward of Fort Milonga. For any counting or arithmetic, write a Python program "
            "and run it with run_code; the granary records are in /data/granary.csv. Answer from its output."
        ),
        plugins=[Sandbox(mount=str(records) if records else None, timeout=10, memory_mb=256)],
        context_files=False,
    )


def main(model=None) -> bandoneon.RunResult:
    with tempfile.TemporaryDirectory(prefix="fort-milonga-") as folder:
        Path(folder, "granary.csv").write_text(GRANARY)
        agent = build_agent(model, records=folder)
        result = agent.run_sync("Each store feeds the fort at its own pace. In how many days does the first store run dry?")
    for message in result.messages:
        if message.role == "tool":
            print(f"[box] {message.content}")
    print(f"stop={result.stop}: {result.text}")
    return result


if __name__ == "__main__":
    main()
