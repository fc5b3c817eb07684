"""Where skills come from: layered sources, other plugins, installed packs, and live files."""

from __future__ import annotations

import os
import warnings
from typing import ClassVar

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call, install_distribution
from bandoneon_skills import Skill, SkillError, Skills, SkillWarning


def catalog(agent) -> dict[str, Skill]:
    return agent.plugin("skills").library(agent).skills


class Contributor:
    """A plugin that contributes skills through the core's register_skills hook."""

    name: ClassVar[str] = "contributor"

    def __init__(self, *items, label=None):
        self.items = items
        self.label = label

    @bandoneon.hookimpl
    def register_skills(self, agent, register):
        for item in self.items:
            register(item, label=self.label)


class OtherContributor(Contributor):
    name: ClassVar[str] = "other-contributor"


def agent_with(*plugins, model=None):
    return bandoneon.Agent(model or ScriptedModel("ok"), plugins=list(plugins), context_files=False)


# ---------------------------------------------------------------- the register_skills hook


def test_a_plugin_contributes_a_folder_a_skill_and_a_list(skills_dir, write_skill):
    write_skill(skills_dir, "from-folder")
    contributor = Contributor(skills_dir, Skill("one", "Use for one.", "1"), [Skill("two", "Use for two.", "2")])
    agent = agent_with(contributor, Skills(packs=[]))
    assert list(catalog(agent)) == ["from-folder", "one", "two"]


def test_a_plugin_contributes_its_own_source_object():
    class Database:
        label = "the skills table"

        def scan(self):
            return [Skill("from-db", "Use for db things.", "rows")], []

    agent = agent_with(Contributor(Database()), Skills(packs=[]))
    assert catalog(agent)["from-db"].source == "the skills table"


def test_registering_something_else_is_a_clear_error():
    with pytest.raises(SkillError, match=r"register\(\) got 42; pass a folder path, a Skill"):
        agent_with(Contributor(42), Skills(packs=[]))


def test_relative_folders_are_relative_to_the_agents_cwd(tmp_path, write_skill):
    write_skill(tmp_path / "skills", "cakes")
    agent = bandoneon.Agent(ScriptedModel(), plugins=[Skills(folders=["skills"], packs=[])], cwd=tmp_path, context_files=False)
    assert list(catalog(agent)) == ["cakes"]


# ---------------------------------------------------------------- layers and precedence


def test_a_later_folder_overrides_an_earlier_one_with_a_warning(tmp_path, write_skill):
    write_skill(tmp_path / "company", "cakes", body="COMPANY")
    write_skill(tmp_path / "project", "cakes", body="PROJECT")
    with pytest.warns(SkillWarning, match=r"skill 'cakes' from folder .*project.* overrides the one from folder .*company"):
        agent = agent_with(Skills(folders=[tmp_path / "company", tmp_path / "project"], packs=[]))
    assert catalog(agent)["cakes"].body == "PROJECT"


def test_in_memory_skills_override_folders_which_override_plugins(tmp_path, write_skill):
    write_skill(tmp_path / "plugin", "cakes", body="PLUGIN")
    write_skill(tmp_path / "plugin", "trays", body="PLUGIN")
    write_skill(tmp_path / "folder", "cakes", body="FOLDER")
    write_skill(tmp_path / "folder", "trays", body="FOLDER")
    memory = Skill("cakes", "Use for cakes.", "MEMORY")
    with pytest.warns(SkillWarning):
        agent = agent_with(Contributor(tmp_path / "plugin"), Skills(folders=[tmp_path / "folder"], skills=[memory], packs=[]))
    assert {n: s.body for n, s in catalog(agent).items()} == {"cakes": "MEMORY", "trays": "FOLDER"}


def test_the_override_warning_is_given_once_not_every_turn(tmp_path, write_skill):
    write_skill(tmp_path / "a", "cakes")
    write_skill(tmp_path / "b", "cakes")
    model = ScriptedModel(call("load_skill", name="cakes"), "ok", "again")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = agent_with(Skills(folders=[tmp_path / "a", tmp_path / "b"], packs=[]), model=model)
        agent.run_sync("one")
        agent.run_sync("two")
    assert len([w for w in caught if issubclass(w.category, SkillWarning)]) == 1


def test_two_plugins_defining_one_name_in_the_same_layer_is_an_error():
    one, two = Skill("cakes", "Use for cakes.", "A"), Skill("cakes", "Use for cakes.", "B")
    with pytest.raises(SkillError, match="two sources registered by plugins define the skill 'cakes'.*nothing says which wins"):
        agent_with(Contributor(one, label="plugin one"), OtherContributor(two, label="plugin two"), Skills(packs=[]))


# ---------------------------------------------------------------- the files as they are now


def test_a_new_skill_is_seen_by_the_next_run_without_restarting(skills_dir, write_skill):
    write_skill(skills_dir, "cakes")
    model = ScriptedModel("first", "second")
    agent = agent_with(Skills(folders=[skills_dir], packs=[]), model=model)
    agent.run_sync("hi")
    write_skill(skills_dir, "catering-quote")
    agent.run_sync("hi again")
    assert "`catering-quote`" not in model.requests[0].system_prompt
    assert "`catering-quote`" in model.requests[1].system_prompt


def test_an_edited_skill_is_seen_by_the_next_run(skills_dir, write_skill):
    write_skill(skills_dir, "cakes", description="Use for cakes.", body="OLD")
    model = ScriptedModel("first", call("load_skill", name="cakes"), "ok")
    agent = agent_with(Skills(folders=[skills_dir], packs=[]), model=model)
    agent.run_sync("hi")
    write_skill(skills_dir, "cakes", description="Use when a customer wants a cake baked.", body="NEW AND LONGER")
    result = agent.run_sync("cake")
    assert "Use when a customer wants a cake baked." in model.requests[1].system_prompt
    assert "NEW AND LONGER" in result.messages[2].content


def test_an_in_place_edit_of_the_same_size_is_seen_by_the_next_run(skills_dir, write_skill):
    # Written into the same file (no new inode, the folders' own stats unchanged): only the
    # SKILL.md's stat shows it, so an unchanged-folder shortcut must not hide it.
    path = write_skill(skills_dir, "cakes", description="Use for cakes, OLD.")
    model = ScriptedModel("first", "second")
    agent = agent_with(Skills(folders=[skills_dir], packs=[]), model=model)
    agent.run_sync("hi")
    before = os.stat(path)
    with open(path, "r+", encoding="utf-8") as file:
        text = file.read()
        file.seek(0)
        file.write(text.replace("OLD", "NEW"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))  # the next clock tick, whatever the timer
    assert os.stat(path).st_ino == before.st_ino and os.stat(path).st_size == before.st_size
    agent.run_sync("hi again")
    assert "Use for cakes, OLD." in model.requests[0].system_prompt
    assert "Use for cakes, NEW." in model.requests[1].system_prompt


def test_a_rescan_with_an_equal_result_keeps_the_catalog_object(skills_dir, write_skill):
    # A touched file is parsed again into an equal skill: the catalog (and its rendering) stays.
    path = write_skill(skills_dir, "cakes")
    agent = agent_with(Skills(folders=[skills_dir], packs=[]), model=ScriptedModel("first", "second"))
    agent.run_sync("hi")
    library = agent.plugin("skills").library(agent)
    first = library.skills
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 1_000_000))
    assert library.refresh() is first
    agent.run_sync("hi again")
    assert library.skills is first


def test_a_deleted_skill_leaves_the_catalog(skills_dir, write_skill):
    path = write_skill(skills_dir, "cakes")
    write_skill(skills_dir, "trays")
    model = ScriptedModel("first", "second")
    agent = agent_with(Skills(folders=[skills_dir], packs=[]), model=model)
    agent.run_sync("hi")
    path.unlink()
    agent.run_sync("hi")
    assert "`cakes`" not in model.requests[1].system_prompt and "`trays`" in model.requests[1].system_prompt


def test_a_skill_broken_while_running_is_left_out_with_a_warning_and_the_run_goes_on(skills_dir, write_skill):
    path = write_skill(skills_dir, "cakes")
    write_skill(skills_dir, "trays")
    model = ScriptedModel("first", "second")
    agent = agent_with(Skills(folders=[skills_dir], packs=[]), model=model)
    agent.run_sync("hi")
    path.write_text("no frontmatter any more")
    with pytest.warns(SkillWarning, match="no frontmatter.*left out until it is fixed"):
        result = agent.run_sync("hi")
    assert result.ok and "`trays`" in model.requests[1].system_prompt and "`cakes`" not in model.requests[1].system_prompt


def test_a_skill_md_added_to_a_folder_that_had_none_is_seen_by_the_next_run(skills_dir, write_skill):
    write_skill(skills_dir, "cakes")
    (skills_dir / "trays").mkdir()
    model = ScriptedModel("first", "second")
    agent = agent_with(Skills(folders=[skills_dir], packs=[]), model=model)
    agent.run_sync("hi")
    write_skill(skills_dir, "trays")
    agent.run_sync("hi again")
    assert "`trays`" not in model.requests[0].system_prompt
    assert "`trays`" in model.requests[1].system_prompt


def test_a_run_with_nothing_changed_stats_the_root_and_each_skill_md_once(skills_dir, write_skill, monkeypatch):
    import bandoneon_skills.sources as sources

    for name in ("cakes", "trays", "quotes"):
        write_skill(skills_dir, name)
    agent = agent_with(Skills(folders=[skills_dir], packs=[]), model=ScriptedModel("first", "second"))
    agent.run_sync("hi")
    stats: list[str] = []
    real_stat = os.stat

    def counting_stat(path, *args, **kwargs):
        # Only this folder's paths: os.stat is the process's, other threads may stat other files.
        if os.fspath(path).startswith(str(skills_dir)):
            stats.append(os.fspath(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(sources.os, "stat", counting_stat)
    agent.run_sync("hi again")
    monkeypatch.undo()
    assert sorted(stats) == sorted([str(skills_dir), *(str(skills_dir / n / "SKILL.md") for n in ("cakes", "trays", "quotes"))])


@pytest.mark.filterwarnings("ignore:.*does not exist")  # the missing folder is reported: another test's subject
def test_a_skills_folder_made_after_a_run_is_seen_by_the_next_run(tmp_path, write_skill):
    later = tmp_path / "not-yet"
    model = ScriptedModel("first", "second")
    agent = agent_with(Skills(folders=[later], packs=[], strict=False), model=model)
    agent.run_sync("hi")
    later.mkdir()
    write_skill(later, "trays")
    agent.run_sync("hi again")
    assert "`trays`" not in model.requests[0].system_prompt
    assert "`trays`" in model.requests[1].system_prompt


def test_an_unchanged_file_is_not_read_again(skills_dir, write_skill, monkeypatch):
    import bandoneon_skills.sources as sources

    write_skill(skills_dir, "cakes")
    parsed = []
    real_parse = sources.parse_skill_md
    monkeypatch.setattr(sources, "parse_skill_md", lambda *a, **k: parsed.append(1) or real_parse(*a, **k))
    model = ScriptedModel(call("load_skill", name="cakes"), "ok", "again")
    agent = agent_with(Skills(folders=[skills_dir], packs=[]), model=model)
    agent.run_sync("one")
    agent.run_sync("two")
    assert len(parsed) == 1


# ---------------------------------------------------------------- skill packs (entry points)


def fake_pack(site, monkeypatch, *, name="acme", target="SKILLS", module_body=None):
    """A distribution on sys.path that declares a skill pack, as `pip install` would leave it."""
    module = module_body or """
        from pathlib import Path
        SKILLS = Path(__file__).parent / "acme_skills"
    """
    install_distribution(site, "acme-pack", {name: f"acme_pack:{target}"}, files={"acme_pack.py": module}, version="0.1", group="bandoneon.skills")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(__import__("sys").modules, "acme_pack", raising=False)
    return site / "acme_skills"


def test_an_installed_pack_is_picked_up(tmp_path, monkeypatch, write_skill):
    skills = fake_pack(tmp_path / "site", monkeypatch)
    write_skill(skills, "expense-report")
    agent = agent_with(Skills())
    skill = catalog(agent)["expense-report"]
    assert skill.source == "skill pack 'acme' (acme-pack 0.1)"


def test_packs_can_be_chosen_or_left_out(tmp_path, monkeypatch, write_skill):
    write_skill(fake_pack(tmp_path / "site", monkeypatch), "expense-report")
    assert "expense-report" in catalog(agent_with(Skills(packs=["acme"])))
    assert "expense-report" not in catalog(agent_with(Skills(packs=[])))


def test_the_operator_can_disable_a_pack(tmp_path, monkeypatch, write_skill):
    write_skill(fake_pack(tmp_path / "site", monkeypatch), "expense-report")
    monkeypatch.setenv("BANDONEON_DISABLED_SKILLPACKS", "acme")
    assert "expense-report" not in catalog(agent_with(Skills()))


def test_an_unknown_pack_name_lists_the_installed_ones(tmp_path, monkeypatch, write_skill):
    write_skill(fake_pack(tmp_path / "site", monkeypatch), "expense-report")
    with pytest.raises(SkillError, match="no skill pack named 'acne' is installed; installed: .*acme"):
        agent_with(Skills(packs=["acne"]))


def test_a_pack_that_fails_to_import_is_named(tmp_path, monkeypatch):
    fake_pack(tmp_path / "site", monkeypatch, module_body="raise RuntimeError('boom')\n")
    with pytest.raises(SkillError, match=r"skill pack 'acme' \(acme-pack 0.1\): could not be loaded: RuntimeError: boom"):
        agent_with(Skills(packs=["acme"]))


def test_a_pack_pointing_at_something_else_says_what_it_must_give(tmp_path, monkeypatch):
    fake_pack(tmp_path / "site", monkeypatch, module_body="SKILLS = 42\n")
    with pytest.raises(SkillError, match="gives 42; it must give a folder path"):
        agent_with(Skills(packs=["acme"]))


def test_a_broken_pack_does_not_hide_the_others_when_not_strict(tmp_path, monkeypatch, skills_dir, write_skill):
    fake_pack(tmp_path / "site", monkeypatch, module_body="raise RuntimeError('boom')\n")
    write_skill(skills_dir, "cakes")
    with pytest.warns(SkillWarning, match="boom"):
        agent = agent_with(Skills(folders=[skills_dir], packs=["acme"], strict=False))
    assert list(catalog(agent)) == ["cakes"]


def test_a_folder_overrides_a_pack(tmp_path, monkeypatch, skills_dir, write_skill):
    write_skill(fake_pack(tmp_path / "site", monkeypatch), "expense-report", body="PACK")
    write_skill(skills_dir, "expense-report", body="LOCAL")
    with pytest.warns(SkillWarning, match="overrides the one from skill pack 'acme'"):
        agent = agent_with(Skills(folders=[skills_dir], packs=["acme"]))
    assert catalog(agent)["expense-report"].body == "LOCAL"
