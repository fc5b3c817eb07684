"""bandoneon-mcp: what a call to an already-started stdio server costs over the SDK alone,
and 100 concurrent calls to one server.

    python benchmarks/mcp_calls.py [--quick]

Both contenders call ``echo`` on the same test server script (plugins/mcp/tests/servers/
toolbox.py), each over its own session: the SDK's ``ClientSession.call_tool`` directly, and a
bandoneon tool from ``McpPlugin`` (schema check, the hop to the shared sessions' loop, result
to text). Calls alternate round by round (benchmarks/timing.py); figures are medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("BANDONEON_DISABLED_PLUGINS", "policy-example")

import bandoneon  # noqa: E402
from bandoneon.testing import ScriptedModel  # noqa: E402
from bandoneon_mcp import McpPlugin  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from timing import compare_async  # noqa: E402

TOOLBOX = HERE.parent / "plugins" / "mcp" / "tests" / "servers" / "toolbox.py"


async def measure(quick: bool) -> str:
    agent = bandoneon.Agent(ScriptedModel(), plugins=[McpPlugin(servers={"box": {"command": sys.executable, "args": [str(TOOLBOX)]}})], context_files=False)
    echo = agent.tools["echo"]
    parameters = StdioServerParameters(command=sys.executable, args=[str(TOOLBOX)])
    try:
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()

            async def sdk() -> None:
                await session.call_tool("echo", {"text": "milonga"})

            async def through_bandoneon() -> None:
                await echo.invoke({"text": "milonga"}, None)

            iterations, rounds = (50, 3) if quick else (300, 7)
            comparison = await compare_async({"sdk": sdk, "bandoneon": through_bandoneon}, iterations=iterations, rounds=rounds, warmup=20)
            per_round = [
                statistics.median(ours) - statistics.median(theirs)
                for ours, theirs in zip(comparison.rounds["bandoneon"], comparison.rounds["sdk"], strict=True)
            ]
            overhead_ms = statistics.median(per_round) * 1000

        results = await asyncio.gather(*(echo.invoke({"text": f"n{i}"}, None) for i in range(100)), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        right = sum(r == f"n{i}" for i, r in enumerate(results))
    finally:
        await agent.aclose()
    medians = comparison.medians()
    return "\n".join(
        [
            "| measure | result |",
            "|---|---|",
            f"| one call, SDK `ClientSession.call_tool` (median) | {medians['sdk'] * 1000:.2f} ms |",
            f"| one call, bandoneon MCP tool (median) | {medians['bandoneon'] * 1000:.2f} ms |",
            f"| bandoneon's added cost per call (median of per-round differences; target <= 1 ms) | {overhead_ms:.2f} ms |",
            f"| 100 concurrent calls to one server | {right}/100 right, {len(failures)} failed |",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(asyncio.run(measure(args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
