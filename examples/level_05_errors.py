"""Level 5 · Errors in the loop: the temple door.

An adventure game: the agent's tools are the verbs LOOK AT and USE, and the task is "open the
temple door". Three kinds of failure, three owners:

- the model asked wrong (the key won't turn in a rusted lock): the tool raises ``ToolError``
  with what to do instead; the model reads it as an error result and tries something else;
- the model's server failed (a 503, a 429, a dropped connection): the retry plugin waits with
  backoff and jitter and calls again. The model never finds out: there was no turn to read;
- nobody can fix it (a 401, a bug): it raises, with the history left valid.

On top of that, the stop plugin's counter gives up when the model keeps hitting the same wall.

    python examples/level_05_errors.py        # BANDONEON_MODEL, bandoneon.toml or a local model
"""

from __future__ import annotations

from typing import Literal

import attrs

import bandoneon

# Layer 1, the server: what may pass by itself is retried (a plugin, on by default).
RETRY_OPTIONS: dict[str, object] = {"max_attempts": 4, "base_delay": 1.0, "max_delay": 8.0, "deadline": 60.0}
# A model stuck on the same wrong move rarely gets out by itself.
STOP_OPTIONS: dict[str, object] = {"max_errors_in_a_row": 3}


@attrs.define
class Room:
    lock_oiled: bool = False
    door_open: bool = False


@bandoneon.tool
def look_at(thing: str, run: bandoneon.RunContext) -> str:
    """Look at something in the room: door, lock, inventory."""
    room: Room = run.deps
    if thing == "door":
        return "A heavy stone door with an iron lock." + (" It is open." if room.door_open else "")
    if thing == "lock":
        return "The lock is oiled and shiny." if room.lock_oiled else "The lock is covered in rust."
    if thing == "inventory":
        return "You carry: key, oil_can."
    raise bandoneon.ToolError(f"You see nothing special about {thing!r}. Try: door, lock, inventory.")


@bandoneon.tool
def use(item: Literal["key", "oil_can"], target: str, run: bandoneon.RunContext) -> str:
    """Use an inventory item with something in the room."""
    room: Room = run.deps
    if item == "oil_can" and target == "lock":
        room.lock_oiled = True
        return "You oil the lock. It looks like it might turn now."
    if item == "key" and target == "door":
        # Layer 2, the tools: say what went wrong and what to try instead. This text is all
        # the model will get; ToolError sends it as is, never a traceback.
        if not room.lock_oiled:
            raise bandoneon.ToolError("The lock is rusted shut and the key won't turn. Oil it first: use oil_can with lock.")
        room.door_open = True
        return "Click! The key turns and the door swings open."
    raise bandoneon.ToolError(f"Nothing happens when you use {item} with {target}.")


def build_agent(model: str | bandoneon.Provider | None = None) -> bandoneon.Agent:
    return bandoneon.Agent(
        model,
        tools=[look_at, use],
        system_prompt="You play an adventure game. Use the tools to act; read their errors, they tell you what to do.",
        max_turns=10,
        plugins={"retry": RETRY_OPTIONS, "stop": STOP_OPTIONS},
    )


def main(model: str | bandoneon.Provider | None = None) -> bandoneon.RunResult:
    agent = build_agent(model)
    # Watch both layers as they happen.
    agent.on("tool_end", lambda e: print(f"  {e.call.name} failed, and the model will read why: {e.output}") if e.is_error else None)
    agent.on("provider_retry", lambda e: print(f"  model call failed ({e.error}); attempt {e.attempt + 1}/{e.max_attempts} in {e.delay:.2f}s"))
    room = Room()
    try:
        result = agent.run_sync("Open the temple door.", deps=room)
    except bandoneon.ProviderError as exc:
        # Layer 3: only what nobody could handle gets here (retries used up, a 401...).
        print(f"The run failed: {exc}")
        raise
    if result.ok:
        print(f"Done ({result.stop}), door open: {room.door_open}. {result.text}")
    else:
        print(f"No answer: the run stopped on {result.stop} ({result.detail}).")
    return result


if __name__ == "__main__":
    main()
