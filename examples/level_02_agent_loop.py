"""Level 2, the agent loop: model → tools → results back → repeat until end_turn.

The mother bird asks "can you clear the pigs' fort?". The model can only ask for a launch;
the loop runs each one and hands back the result until the model says it is done.
"""

from __future__ import annotations

from typing import Annotated

import bandoneon

FORT = {"blocks": 2}


@bandoneon.tool
def launch_red(angle: Annotated[int, "Launch angle in degrees, 10 to 80"]) -> str:
    """Fling the red bird. Knocks down one block when the angle is between 35 and 50."""
    if not 10 <= angle <= 80:
        raise bandoneon.ToolError("angle must be between 10 and 80 degrees")
    if 35 <= angle <= 50 and FORT["blocks"]:
        FORT["blocks"] -= 1
        return f"Hit! {FORT['blocks']} blocks left."
    return f"Missed at {angle} degrees. {FORT['blocks']} blocks left."


@bandoneon.tool
def launch_bomb(angle: Annotated[int, "Launch angle in degrees, 10 to 80"]) -> str:
    """Fling the bomb bird: clears every block left when it lands (angle 40 to 45)."""
    if 40 <= angle <= 45:
        FORT["blocks"] = 0
        return "Boom! The fort is cleared."
    return f"The bomb fell short at {angle} degrees."


def build_agent(model=None) -> bandoneon.Agent:
    return bandoneon.Agent(
        model,
        tools=[launch_red, launch_bomb],
        system_prompt="You clear pig forts with birds. Launch until no blocks are left, then say so.",
        context_files=False,
        max_turns=10,
    )


def main(model=None) -> bandoneon.RunResult:
    FORT["blocks"] = 2
    agent = build_agent(model)
    agent.on("tool_end", lambda event: print(f"  {event.call.name}: {event.output}"))
    result = agent.run_sync("Can you clear the pigs' fort?")
    print(f"{result.text}  [stop={result.stop}, turns={result.turns}]")
    return result


if __name__ == "__main__":
    main()
