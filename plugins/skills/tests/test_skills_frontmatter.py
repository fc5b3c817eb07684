"""Bad SKILL.md files: each gets one clear sentence naming the file, and costs no other skill."""

from __future__ import annotations

import warnings

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_skills import Skill, SkillError, Skills, SkillWarning


def build(skills_dir, model=None, **options):
    options.setdefault("packs", [])
    return bandoneon.Agent(model or ScriptedModel("ok"), plugins=[Skills(folders=[skills_dir], **options)], context_files=False)


def problem_for(skills_dir) -> str:
    with pytest.raises(SkillError) as caught:
        build(skills_dir)
    assert len(caught.value.problems) == 1, caught.value.problems
    return caught.value.problems[0]


def test_a_file_without_frontmatter_is_named_in_the_error(skills_dir):
    (skills_dir / "allergen-info").mkdir()
    (skills_dir / "allergen-info" / "SKILL.md").write_text("# Allergens\nNo nuts.\n")
    problem = problem_for(skills_dir)
    assert str(skills_dir / "allergen-info" / "SKILL.md") in problem
    assert "no frontmatter" in problem and "'---'" in problem


@pytest.mark.parametrize("name", ["Custom_Cake", "-cake", "cake-", "cake--order", "x" * 65, "cake order"])
def test_a_bad_name_says_what_a_name_may_be(skills_dir, write_skill, name):
    write_skill(skills_dir, name, folder="folder")
    problem = problem_for(skills_dir)
    assert "is not valid" in problem and "lowercase letters, digits and single hyphens" in problem


def test_the_name_must_equal_the_folder(skills_dir, write_skill):
    write_skill(skills_dir, "custom-cake-order", folder="cakes")
    assert "name 'custom-cake-order' does not match its folder 'cakes'" in problem_for(skills_dir)


def test_a_missing_description_is_named(skills_dir):
    (skills_dir / "cakes").mkdir()
    (skills_dir / "cakes" / "SKILL.md").write_text("---\nname: cakes\n---\nBody\n")
    assert "the frontmatter has no 'description'" in problem_for(skills_dir)


def test_a_description_too_long_gives_the_limit(skills_dir, write_skill):
    write_skill(skills_dir, "cakes", description="word " * 300)
    assert "keep it under 1024" in problem_for(skills_dir)


def test_broken_yaml_gives_the_line(skills_dir):
    (skills_dir / "cakes").mkdir()
    (skills_dir / "cakes" / "SKILL.md").write_text("---\nname: cakes\ndescription: [unclosed\n---\nBody\n")
    problem = problem_for(skills_dir)
    assert "not valid YAML" in problem and "line" in problem


def test_an_empty_body_is_a_problem(skills_dir):
    (skills_dir / "cakes").mkdir()
    (skills_dir / "cakes" / "SKILL.md").write_text("---\nname: cakes\ndescription: Use for cakes.\n---\n\n")
    assert "the body is empty" in problem_for(skills_dir)


def test_a_file_that_is_not_utf8_is_unreadable_with_a_reason(skills_dir):
    (skills_dir / "cakes").mkdir()
    (skills_dir / "cakes" / "SKILL.md").write_bytes(b"---\nname: cakes\ndescription: caf\xe9\n---\nBody\n")
    assert "is not UTF-8 text" in problem_for(skills_dir)


def test_a_skill_md_that_cannot_be_read_is_reported(skills_dir):
    (skills_dir / "cakes").mkdir()
    (skills_dir / "cakes" / "SKILL.md").mkdir()  # a folder where the file should be
    assert "cannot be read" in problem_for(skills_dir)


def test_a_lowercase_skill_md_is_pointed_out(skills_dir):
    (skills_dir / "cakes").mkdir()
    (skills_dir / "cakes" / "skill.md").write_text("---\nname: cakes\ndescription: x\n---\nBody\n")
    assert "must be named exactly SKILL.md" in problem_for(skills_dir)


def test_a_missing_skills_folder_is_an_error(tmp_path):
    with pytest.raises(SkillError, match="does not exist"):
        build(tmp_path / "nowhere")


def test_every_problem_is_listed_at_once(skills_dir, write_skill):
    write_skill(skills_dir, "Bad", folder="bad")
    write_skill(skills_dir, "good-one", folder="other")
    with pytest.raises(SkillError) as caught:
        build(skills_dir)
    assert len(caught.value.problems) == 2
    assert "2 problem(s) with skills" in str(caught.value)


def test_not_strict_warns_and_keeps_the_good_skills(skills_dir, write_skill):
    write_skill(skills_dir, "Bad", folder="bad")
    write_skill(skills_dir, "allergen-info", body="No nuts.")
    model = ScriptedModel(call("load_skill", name="allergen-info"), "ok")
    with pytest.warns(SkillWarning, match="is not valid"):
        agent = build(skills_dir, model, strict=False)
    result = agent.run_sync("nuts?")
    assert "No nuts." in result.messages[2].content
    assert "`allergen-info`" in model.requests[0].system_prompt


def test_loading_a_broken_skill_says_why(skills_dir, write_skill):
    write_skill(skills_dir, "allergen-info")
    write_skill(skills_dir, "cakes", folder="cakes", extra="allowed-tools: 3\n")
    model = ScriptedModel(call("load_skill", name="cakes"), "ok")
    with pytest.warns(SkillWarning):
        agent = build(skills_dir, model, strict=False)
    result = agent.run_sync("cake")
    content = result.messages[2].content
    assert content.startswith("The skill 'cakes' cannot be loaded:")
    assert "'allowed-tools' must be a list" in content and "Available skills: allergen-info." in content


@pytest.mark.parametrize(
    ("written", "expected"),
    [("check_calendar", ("check_calendar",)), ("check_calendar, read_file", ("check_calendar", "read_file")),
     ("[a, b]", ("a", "b")), ('""', ())],
)
def test_allowed_tools_accepts_a_string_or_a_list(skills_dir, write_skill, written, expected):
    write_skill(skills_dir, "cakes", extra=f"allowed-tools: {written}\n")
    agent = build(skills_dir)
    assert agent.plugin("skills").library(agent).skills["cakes"].allowed_tools == expected


def test_in_memory_skills_are_checked_too():
    with pytest.raises(SkillError, match="is not valid"):
        Skill("Bad Name", "Use when.", "Body")
    with pytest.raises(SkillError, match="'description' must be a non-empty string"):
        Skill("good", "  ", "Body")
    with pytest.raises(SkillError, match="two skills are named 'good'"):
        bandoneon.Agent(ScriptedModel(), plugins=[Skills(skills=[Skill("good", "a", "b"), Skill("good", "c", "d")], packs=[])], context_files=False)


def test_hidden_folders_and_loose_files_are_ignored(skills_dir, write_skill):
    write_skill(skills_dir, "cakes")
    (skills_dir / ".git").mkdir()
    (skills_dir / "README.md").write_text("not a skill")
    (skills_dir / "assets").mkdir()  # no SKILL.md: shared files, not a skill
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent = build(skills_dir)
    assert list(agent.plugin("skills").library(agent).skills) == ["cakes"]


def test_a_windows_saved_file_with_bom_and_crlf_is_read(skills_dir):
    (skills_dir / "cakes").mkdir()
    (skills_dir / "cakes" / "SKILL.md").write_bytes("\ufeff---\r\nname: cakes\r\ndescription: Use for cakes.\r\n---\r\nBody\r\n".encode())
    agent = build(skills_dir)
    assert agent.plugin("skills").library(agent).skills["cakes"].body == "Body"
