"""The filesystem mode's file tool reads nothing outside the skill folders, however it is asked."""

from __future__ import annotations

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_skills import SkillError, Skills


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text("TOP-SECRET")
    return path


def read(skills_dir, path: str, **options) -> bandoneon.Message:
    model = ScriptedModel(call("read_skill_file", path=path), "ok")
    agent = bandoneon.Agent(model, plugins=[Skills(mode="filesystem", folders=[skills_dir], packs=[], **options)], context_files=False)
    result = agent.run_sync("read it")
    assert result.ok  # a refused read is a result the model reads, never a crash
    return result.messages[2]


def test_dot_dot_cannot_climb_out(skills_dir, write_skill, secret):
    write_skill(skills_dir, "cakes")
    message = read(skills_dir, str(skills_dir / "cakes" / ".." / ".." / "secret.txt"))
    assert message.is_error and "TOP-SECRET" not in message.content
    assert "is outside the skill folders" in message.content and str(secret) in message.content


def test_relative_dot_dot_cannot_climb_out(skills_dir, write_skill, secret):
    write_skill(skills_dir, "cakes")
    message = read(skills_dir, "cakes/../../secret.txt")
    assert message.is_error and "TOP-SECRET" not in message.content


def test_a_symlink_inside_a_skill_folder_cannot_point_out(skills_dir, write_skill, secret):
    write_skill(skills_dir, "cakes")
    (skills_dir / "cakes" / "notes.md").symlink_to(secret)
    message = read(skills_dir, str(skills_dir / "cakes" / "notes.md"))
    assert message.is_error and "TOP-SECRET" not in message.content
    assert "is outside the skill folders" in message.content


def test_the_skills_root_itself_is_not_readable(skills_dir, write_skill):
    write_skill(skills_dir, "cakes")
    (skills_dir / "private.md").write_text("ROOT-FILE")
    message = read(skills_dir, str(skills_dir / "private.md"))
    assert message.is_error and "ROOT-FILE" not in message.content


def test_an_absolute_path_elsewhere_is_refused(skills_dir, write_skill):
    write_skill(skills_dir, "cakes")
    message = read(skills_dir, "/etc/passwd")
    assert message.is_error and "root:" not in message.content


def test_a_symlink_that_stays_inside_is_fine(skills_dir, write_skill):
    write_skill(skills_dir, "cakes")
    (skills_dir / "cakes" / "sizes.md").write_text("18 cm feeds 12.")
    (skills_dir / "cakes" / "alias.md").symlink_to(skills_dir / "cakes" / "sizes.md")
    message = read(skills_dir, str(skills_dir / "cakes" / "alias.md"))
    assert not message.is_error and message.content == "18 cm feeds 12."


def test_a_skill_folder_symlinked_from_outside_is_refused_when_scanning(skills_dir, tmp_path, write_skill):
    outside = tmp_path / "elsewhere"
    write_skill(outside, "cakes")
    (skills_dir / "cakes").symlink_to(outside / "cakes")
    with pytest.raises(SkillError, match=r"the skill folder is a symlink to .*elsewhere/cakes, outside"):
        bandoneon.Agent(ScriptedModel(), plugins=[Skills(mode="filesystem", folders=[skills_dir], packs=[])], context_files=False)


def test_a_skill_md_symlinked_from_outside_is_refused(skills_dir, tmp_path, write_skill):
    outside = write_skill(tmp_path / "elsewhere", "cakes")
    (skills_dir / "cakes").mkdir()
    (skills_dir / "cakes" / "SKILL.md").symlink_to(outside)
    with pytest.raises(SkillError, match="SKILL.md is a symlink to .* outside its skill folder"):
        bandoneon.Agent(ScriptedModel(), plugins=[Skills(folders=[skills_dir], packs=[])], context_files=False)


def test_a_missing_file_is_a_clear_error(skills_dir, write_skill):
    write_skill(skills_dir, "cakes")
    message = read(skills_dir, str(skills_dir / "cakes" / "nope.md"))
    assert message.is_error and "does not exist" in message.content


def test_binary_files_are_refused(skills_dir, write_skill):
    write_skill(skills_dir, "cakes")
    (skills_dir / "cakes" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    message = read(skills_dir, str(skills_dir / "cakes" / "logo.png"))
    assert message.is_error and "not a text file" in message.content


def test_long_files_are_cut_and_say_so(skills_dir, write_skill):
    write_skill(skills_dir, "cakes")
    (skills_dir / "cakes" / "long.md").write_text("a" + "ñ" * 500)  # the byte limit falls inside a character
    message = read(skills_dir, str(skills_dir / "cakes" / "long.md"), max_file_chars=100)
    assert message.content.startswith("a" + "ñ" * 99) and "cut at 100 characters" in message.content


def test_a_skill_folder_can_be_listed(skills_dir, write_skill):
    write_skill(skills_dir, "cakes")
    (skills_dir / "cakes" / "sizes.md").write_text("x")
    message = read(skills_dir, str(skills_dir / "cakes"))
    assert "SKILL.md" in message.content and "sizes.md" in message.content
