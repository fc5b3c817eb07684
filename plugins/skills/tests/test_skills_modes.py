"""The three modes: what reaches the system prompt, and the tool each mode adds."""

from __future__ import annotations

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_skills import Skill, Skills


def make_agent(model, **options):
    options.setdefault("packs", [])
    return bandoneon.Agent(model, plugins=[Skills(**options)], context_files=False)


def test_on_demand_puts_only_the_catalog_in_the_prompt(skills_dir, write_skill):
    write_skill(skills_dir, "custom-cake-order", "Use when a customer wants a cake baked.", body="SECRET-BODY")
    model = ScriptedModel("hello")
    agent = make_agent(model, folders=[skills_dir])
    agent.run_sync("hi")
    prompt = model.requests[0].system_prompt
    assert "`custom-cake-order`: Use when a customer wants a cake baked." in prompt
    assert "SECRET-BODY" not in prompt
    assert [t.name for t in model.requests[0].tools] == ["load_skill"]


def test_load_skill_returns_the_body(skills_dir, write_skill):
    write_skill(skills_dir, "custom-cake-order", body="Size by guests.")
    model = ScriptedModel(call("load_skill", name="custom-cake-order"), "done")
    result = make_agent(model, folders=[skills_dir]).run_sync("a cake please")
    tool_message = [m for m in result.messages if m.role == "tool"][0]
    assert not tool_message.is_error
    assert tool_message.content.startswith('<skill name="custom-cake-order">\nSize by guests.')


def test_load_skill_with_an_unknown_name_lists_the_available_ones(skills_dir, write_skill):
    write_skill(skills_dir, "custom-cake-order")
    write_skill(skills_dir, "allergen-info")
    model = ScriptedModel(call("load_skill", name="wedding-cake"), "sorry")
    result = make_agent(model, folders=[skills_dir]).run_sync("a cake please")
    tool_message = [m for m in result.messages if m.role == "tool"][0]
    assert tool_message.is_error
    assert tool_message.content == "There is no skill named 'wedding-cake'. Available skills: allergen-info, custom-cake-order."
    assert result.ok and result.text == "sorry"


def test_all_mode_puts_every_body_in_the_prompt_and_adds_no_tool(skills_dir, write_skill):
    write_skill(skills_dir, "custom-cake-order", body="BODY-ONE")
    write_skill(skills_dir, "allergen-info", body="BODY-TWO")
    model = ScriptedModel("ok")
    make_agent(model, mode="all", folders=[skills_dir]).run_sync("hi")
    prompt = model.requests[0].system_prompt
    assert "BODY-ONE" in prompt and "BODY-TWO" in prompt
    assert model.requests[0].tools == ()


def test_filesystem_mode_lists_paths_and_reads_them(skills_dir, write_skill):
    path = write_skill(skills_dir, "custom-cake-order", body="Size by guests.")
    model = ScriptedModel(call("read_skill_file", path=str(path.resolve())), "ok")
    result = make_agent(model, mode="filesystem", folders=[skills_dir]).run_sync("cake")
    assert f"`custom-cake-order` ({path.resolve()}):" in model.requests[0].system_prompt
    assert [t.name for t in model.requests[0].tools] == ["read_skill_file"]
    tool_message = [m for m in result.messages if m.role == "tool"][0]
    assert not tool_message.is_error
    assert "name: custom-cake-order" in tool_message.content and "Size by guests." in tool_message.content


def test_filesystem_mode_reads_relative_paths_and_neighbouring_files(skills_dir, write_skill):
    write_skill(skills_dir, "catering-quote")
    (skills_dir / "catering-quote" / "prices.md").write_text("One tray: 45 euros.")
    model = ScriptedModel(call("read_skill_file", path="catering-quote/prices.md"), "ok")
    result = make_agent(model, mode="filesystem", folders=[skills_dir]).run_sync("quote")
    assert result.messages[2].content == "One tray: 45 euros."


def test_in_memory_skills_work_in_every_mode():
    skill = Skill("allergen-info", "Use when a customer asks about allergens.", "No nuts on Mondays.")
    on_demand = ScriptedModel(call("load_skill", name="allergen-info"), "ok")
    result = make_agent(on_demand, skills=[skill]).run_sync("nuts?")
    assert "No nuts on Mondays." in result.messages[2].content
    filesystem = ScriptedModel(call("read_skill_file", path="skill:allergen-info"), "ok")
    result = make_agent(filesystem, mode="filesystem", skills=[skill]).run_sync("nuts?")
    assert "(skill:allergen-info)" in filesystem.requests[0].system_prompt
    assert "No nuts on Mondays." in result.messages[2].content


def test_no_skills_means_no_section():
    model = ScriptedModel("ok")
    make_agent(model).run_sync("hi")
    assert "available-skills" not in model.requests[0].system_prompt


def test_an_unknown_mode_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="mode"):
        bandoneon.Agent(ScriptedModel(), plugins={"skills": {"mode": "sometimes", "packs": []}}, context_files=False)


def test_options_come_by_name_as_from_bandoneon_toml(skills_dir, write_skill):
    write_skill(skills_dir, "allergen-info")
    model = ScriptedModel("ok")
    agent = bandoneon.Agent(model, plugins={"skills": {"folders": [str(skills_dir)], "packs": []}}, context_files=False)
    agent.run_sync("hi")
    assert "`allergen-info`" in model.requests[0].system_prompt
