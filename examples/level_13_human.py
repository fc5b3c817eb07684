"""Level 13 · Human in the loop: the claw machine, with Tina keeping the say.

``move_claw`` is free; ``drop_claw`` spends the last coin, so it waits for Tina's YES.
The agent asks her when it is not sure (``ask_kid``), and when she sees the claw heading
for the wrong prize she shouts a correction: the next tool call is cancelled and the model
reads what she said instead.

Run interactively (``--terminal``) and Tina is you, on the terminal. Without it, a scripted
Tina answers, so the story runs unattended.
"""

from __future__ import annotations

import sys
from typing import Any

import bandoneon
from bandoneon_human import Answer, ApprovalRequest, Callbacks, Human, Question

CLAW = {"over": "nothing"}


@bandoneon.tool
def move_claw(to: str) -> str:
    """Move the claw over a prize (bear, penguin, duck). Free, and can be undone."""
    CLAW["over"] = to
    return f"The claw is over the {to}."


@bandoneon.tool(needs_approval=True)
def drop_claw() -> str:
    """Drop the claw and grab the prize under it. Spends the last coin: cannot be undone."""
    return f"Got it! Tina wins the {CLAW['over']}."


def scripted_tina() -> Callbacks:
    """Tina, for an unattended run: she approves only the penguin, and answers questions."""

    def approve(request: ApprovalRequest) -> Answer:
        if CLAW["over"] == "penguin":
            return Answer(True, by="tina")
        return Answer(False, by="tina", note=f"Not the {CLAW['over']}!")

    def ask(question: Question) -> str:
        return "The brown bear! No... I don't know."

    return Callbacks(approve=approve, ask=ask)


def build_agent(model: Any = None, *, terminal: bool = False) -> bandoneon.Agent:
    CLAW["over"] = "nothing"
    human = Human(channel="terminal" if terminal else scripted_tina(), ask_tool="ask_kid", timeout=120)
    agent = bandoneon.Agent(
        model,
        system_prompt="You work a claw machine for Tina. If you are not sure which prize she means, ask her before acting.",
        tools=[move_claw, drop_claw],
        plugins=[human],
        max_turns=20,
        context_files=False,
    )

    # STEER: Tina watches the screen. The moment the claw reaches the bear, she shouts.
    # (In an app this is a button; steer() is safe from any thread or task.)
    def watch(event: bandoneon.ToolEnd) -> None:
        if event.call.name == "move_claw" and CLAW["over"] == "bear":
            agent.plugin(Human).steer("No, wait! The penguin!")

    agent.on("tool_end", watch)
    agent.on("steering", lambda e: print(f"  Tina: {e.text!r} (cancelled {e.call.name})"))
    return agent


def main(model: Any = None, *, terminal: bool = False) -> bandoneon.RunResult:
    agent = build_agent(model, terminal=terminal)
    result = agent.run_sync("Get me the bear!")
    print(result.text)
    return result


if __name__ == "__main__":
    main(terminal="--terminal" in sys.argv)
