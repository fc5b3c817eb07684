"""The example pack: installed with pip, its skills reach every agent with the skills plugin."""

from __future__ import annotations

import importlib.metadata

import bandoneon
from bandoneon.testing import ScriptedModel, call
from bandoneon_skills import PACK_GROUP, Skills


def test_the_pack_declares_its_folder_in_the_entry_point_group():
    entry = {ep.name: ep for ep in importlib.metadata.entry_points(group=PACK_GROUP)}["bakery"]
    assert entry.dist.name == "bandoneon-skillpack-bakery"
    assert (entry.load() / "custom-cake-order" / "SKILL.md").is_file()


def test_an_agent_with_the_skills_plugin_sees_the_pack_without_configuration():
    model = ScriptedModel(call("load_skill", name="allergen-info"), "Pan dulce has walnuts.")
    agent = bandoneon.Agent(model, plugins=[Skills()], context_files=False)
    result = agent.run_sync("Is the pan dulce nut-free?")
    prompt = model.requests[0].system_prompt
    for name in ("custom-cake-order", "catering-quote", "allergen-info"):
        assert f"`{name}`" in prompt
    assert "Pan dulce: wheat, eggs, candied fruit, walnuts." in result.messages[2].content


def test_every_skill_in_the_pack_is_valid():
    agent = bandoneon.Agent(ScriptedModel(), plugins=[Skills(packs=["bakery"])], context_files=False)  # strict: raises if not
    library = agent.plugin("skills").library(agent)
    assert sorted(library.skills) == ["allergen-info", "catering-quote", "custom-cake-order"]
    assert all(s.source.startswith("skill pack 'bakery' (bandoneon-skillpack-bakery") for s in library.skills.values())
