"""allowed-tools is enforced while the skill that sets it is loaded (astorlm only stores it)."""

from __future__ import annotations

import bandoneon
from bandoneon.testing import ScriptedModel, call
from bandoneon_skills import Skill, Skills

CAKES = Skill("custom-cake-order", "Use when a customer wants a cake.", "Check the calendar.", allowed_tools=["check_calendar"])
ALLERGENS = Skill("allergen-info", "Use for allergens.", "Never guess.")
CATERING = Skill("catering-quote", "Use for trays.", "Quote.", allowed_tools="price_*")

ran: list[str] = []


@bandoneon.tool
def check_calendar(day: str) -> str:
    """Free slots for a day."""
    ran.append("check_calendar")
    return f"{day}: free"


@bandoneon.tool
def send_email(to: str) -> str:
    """Send an email."""
    ran.append("send_email")
    return "sent"


@bandoneon.tool
def price_tray(count: int) -> str:
    """Price of trays."""
    ran.append("price_tray")
    return str(45 * count)


def make_agent(model, *, skills=(CAKES, ALLERGENS, CATERING), **options):
    ran.clear()
    plugin = Skills(skills=list(skills), packs=[], **options)
    return bandoneon.Agent(model, tools=[check_calendar, send_email, price_tray], plugins=[plugin], context_files=False)


def tool_messages(result):
    return [m for m in result.messages if m.role == "tool"]


def test_a_tool_outside_the_loaded_skill_is_refused():
    model = ScriptedModel(call("load_skill", name="custom-cake-order"), call("send_email", to="boss"), "ok")
    result = make_agent(model).run_sync("cake")
    refused = tool_messages(result)[1]
    assert refused.is_error
    assert refused.content.startswith("send_email is not allowed while the loaded skills limit the tools (custom-cake-order allows check_calendar)")
    assert ran == []
    assert result.ok  # the refusal is a result the model reads; the run goes on


def test_the_allowed_tool_runs():
    model = ScriptedModel(call("load_skill", name="custom-cake-order"), call("check_calendar", day="Friday"), "ok")
    result = make_agent(model).run_sync("cake")
    assert tool_messages(result)[1].content == "Friday: free"
    assert ran == ["check_calendar"]


def test_without_a_loaded_skill_nothing_is_limited():
    model = ScriptedModel(call("send_email", to="boss"), "ok")
    make_agent(model).run_sync("mail")
    assert ran == ["send_email"]


def test_a_skill_without_the_field_adds_no_limit():
    model = ScriptedModel(call("load_skill", name="allergen-info"), call("send_email", to="boss"), "ok")
    make_agent(model).run_sync("nuts")
    assert ran == ["send_email"]


def test_a_failed_load_does_not_count():
    model = ScriptedModel(call("load_skill", name="custom-cake-orders"), call("send_email", to="boss"), "ok")
    make_agent(model).run_sync("cake")
    assert ran == ["send_email"]


def test_two_limiting_skills_allow_the_union_and_globs_match():
    model = ScriptedModel(
        [call("load_skill", name="custom-cake-order"), call("load_skill", name="catering-quote")],
        [call("check_calendar", day="Friday"), call("price_tray", count=2), call("send_email", to="x")],
        "ok",
    )
    result = make_agent(model).run_sync("cake and trays")
    assert ran == ["check_calendar", "price_tray"]
    assert "catering-quote allows price_*" in tool_messages(result)[-1].content


def test_a_loaded_skill_stays_loaded_in_the_next_run_of_the_same_agent():
    model = ScriptedModel(call("load_skill", name="custom-cake-order"), "loaded", call("send_email", to="x"), "ok")
    agent = make_agent(model)
    agent.run_sync("cake")
    second = agent.run_sync("now mail it")
    assert tool_messages(second)[0].is_error and ran == []


def test_clearing_the_history_unloads_the_skill():
    model = ScriptedModel(call("load_skill", name="custom-cake-order"), "loaded", call("send_email", to="x"), "ok")
    agent = make_agent(model)
    agent.run_sync("cake")
    agent.clear()
    agent.run_sync("mail")
    assert ran == ["send_email"]


def test_always_allowed_tools_run_under_any_limit():
    model = ScriptedModel(call("load_skill", name="custom-cake-order"), call("send_email", to="x"), "ok")
    make_agent(model, always_allowed=["send_email"]).run_sync("cake")
    assert ran == ["send_email"]


def test_in_all_mode_every_skill_is_loaded_so_limits_apply_from_the_start():
    model = ScriptedModel(call("send_email", to="x"), call("check_calendar", day="Mon"), "ok")
    make_agent(model, mode="all").run_sync("hi")
    assert ran == ["check_calendar"]


def test_in_filesystem_mode_reading_a_skill_md_loads_it(skills_dir, write_skill):
    path = write_skill(skills_dir, "custom-cake-order", extra="allowed-tools: check_calendar\n")
    (skills_dir / "custom-cake-order" / "notes.md").write_text("notes")
    model = ScriptedModel(
        call("read_skill_file", path=str(skills_dir / "custom-cake-order" / "notes.md")),
        call("send_email", to="x"),
        call("read_skill_file", path=str(path)),
        call("send_email", to="y"),
        "ok",
    )
    ran.clear()
    plugin = Skills(mode="filesystem", folders=[skills_dir], packs=[])
    agent = bandoneon.Agent(model, tools=[check_calendar, send_email], plugins=[plugin], context_files=False)
    result = agent.run_sync("cake")
    assert ran == ["send_email"]  # a neighbouring file is not the skill; reading SKILL.md is
    assert tool_messages(result)[3].is_error


def test_a_refusal_is_a_tool_refused_event():
    model = ScriptedModel(call("load_skill", name="custom-cake-order"), call("send_email", to="x"), "ok")
    agent = make_agent(model)
    seen = []
    agent.on("tool_refused", seen.append)
    agent.run_sync("cake")
    assert [e.call.name for e in seen] == ["send_email"]


def test_a_fork_carries_the_loaded_skill_with_its_history():
    model = ScriptedModel(call("load_skill", name="custom-cake-order"), "loaded", call("send_email", to="x"), "ok")
    agent = make_agent(model)
    agent.run_sync("cake")
    forked = agent.fork()
    forked.run_sync("mail it")
    assert ran == []
