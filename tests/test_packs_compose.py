"""Installed policy packs govern every agent the plugins build: forks, subagents, laps, heartbeat
agents and evals' fresh agents run under the example pack, as the same enforcement, with no error."""

from __future__ import annotations

import bandoneon
import pytest
from bandoneon.testing import FunctionModel, ScriptedModel, call

pytestmark = pytest.mark.usefixtures("example_pack")

BOOKED: list[str] = []


@pytest.fixture(autouse=True)
def _nothing_booked():
    BOOKED.clear()


@bandoneon.tool
def book_ticket(train: int, seat_class: str) -> str:
    """Book one seat on a train."""
    BOOKED.append(seat_class)
    return f"Booked train {train}, {seat_class} class, for Ana (DNI 30.123.456)."


def books_first_then_tourist() -> FunctionModel:
    """Asks for first class, then (refused) for tourist, then answers with what it read."""

    def reply(request):
        results = [m for m in request.messages if m.role == "tool"]
        if not results:
            return call("book_ticket", train=7, seat_class="first")
        if len(results) == 1:
            return call("book_ticket", train=7, seat_class="tourist")
        return results[-1].content

    return FunctionModel(reply)


def assert_governed(text: str | None) -> None:
    assert BOOKED == ["tourist"], "the pack let first class through (or nothing ran)"
    assert text is not None and "DNI ***" in text and "30.123.456" not in text


def test_a_fork_runs_under_the_pack():
    agent = bandoneon.Agent(books_first_then_tourist(), tools=[book_ticket], plugins=[], context_files=False)
    result = agent.fork().run_sync("Book train 7.")
    assert result.ok
    assert_governed(result.text)


def test_a_lap_agent_runs_under_the_pack(tmp_path):
    from bandoneon_laps import run_goal_loop_sync

    model = books_first_then_tourist()
    result = run_goal_loop_sync(
        "Book train 7.",
        make_agent=lambda: bandoneon.Agent(model, tools=[book_ticket], plugins=[], context_files=False),
        is_done=lambda: bool(BOOKED),
        max_laps=2,
    )
    assert result.done and result.records[0].error is None
    assert_governed(result.last_text)


async def test_a_heartbeat_agent_runs_under_the_pack():
    from bandoneon_heartbeat import Heartbeat

    async def no_wait(seconds):
        return None

    agent = bandoneon.Agent(books_first_then_tourist(), tools=[book_ticket], plugins=[], context_files=False)
    report = await Heartbeat(agent, interval=60, check_prompt="Book train 7.", max_ticks=1, sleep=no_wait).run()
    assert report.outcomes[0].outcome == "woken"
    assert_governed(report.outcomes[0].text)


def test_an_evals_fresh_agent_runs_under_the_pack():
    from bandoneon_evals import Case, contains, evaluate

    report = evaluate(
        [Case("book", "Book train 7.", {})],
        lambda: bandoneon.Agent(books_first_then_tourist(), tools=[book_ticket], plugins=[], context_files=False),
        [contains("tourist")],
        progress=False,
    )
    run = report.case("book").runs[0]
    assert run.error is None and report.cases[0].pass_rate == 1.0
    assert_governed(run.output)


def test_a_subagent_runs_under_the_pack():
    from bandoneon_subagents import subagent

    child_model = books_first_then_tourist()
    scout = subagent("booker", "Books tickets.", model=child_model, tools=[book_ticket], system_prompt="Book what you are asked.")
    parent = bandoneon.Agent(ScriptedModel(call("booker", task="Book train 7."), "done"), tools=[scout], plugins=[], context_files=False)
    assert parent.run_sync("go").ok
    assert BOOKED == ["tourist"]
