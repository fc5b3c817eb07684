"""What a type checker must conclude about typed agents (checked by tests/test_typing.py).

Lines ending in ``# E: <code>`` must be reported with that error code; no other line may be.
"""

from typing import Any, Literal, assert_type

import attrs

from bandoneon import Agent, RunResult


@attrs.frozen
class City:
    name: str
    population: int


class Deps:
    pass


typed = Agent("openai:m", output_type=City)
assert_type(typed, Agent[Any, City])
assert_type(typed.run_sync("?"), RunResult[City])
assert_type(typed.run_sync("?").output, City | None)
assert_type(typed.run_sync("?", output_type=list[City]), RunResult[list[City]])

plain = Agent("openai:m")
assert_type(plain.run_sync("?"), RunResult[str])
assert_type(plain.run_sync("?", output_type=int).output, int | None)


async def in_a_coroutine() -> None:
    result = await typed.run("?")
    assert_type(result.output, City | None)
    assert_type(await plain.run("?", output_type=City), RunResult[City])


with_deps = Agent("openai:m", deps_type=Deps, output_type=City)
assert_type(with_deps, Agent[Deps, City])
with_deps.run_sync("?", deps=Deps())
with_deps.run_sync("?", deps=3)  # E: call-overload
typed.run_sync("?").output.name  # E: union-attr


# A Literal or a union is not a ``type`` to a checker: accepted, typed Any unless annotated.
verdict = Agent("openai:m", output_type=Literal["yes", "no"])
assert_type(verdict, Agent[Any, Any])
either: Agent[None, City | Deps] = Agent("openai:m", output_type=City | Deps)
assert_type(either.run_sync("?").output, City | Deps | None)
assert_type(plain.run_sync("?", output_type=Literal["yes", "no"]), RunResult[Any])
assert_type(plain.run_sync("?", output_type=City | Deps), RunResult[Any])
