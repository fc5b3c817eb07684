"""`bandoneon skills [FOLDER...]`: the catalog and every problem, exit 1 when there is one."""

from __future__ import annotations

import bandoneon.cli


def test_a_clean_folder_lists_its_skills_and_exits_0(skills_dir, write_skill, capsys):
    write_skill(skills_dir, "cakes", extra="allowed-tools: check_calendar\n")
    assert bandoneon.cli.main(["skills", str(skills_dir), "--no-packs"]) == 0
    out = capsys.readouterr().out
    assert "cakes  (" in out and "[allowed-tools: check_calendar]" in out and "1 skill, 0 problems" in out


def test_problems_are_printed_and_exit_1(skills_dir, write_skill, capsys):
    write_skill(skills_dir, "cakes")
    write_skill(skills_dir, "Bad", folder="bad")
    assert bandoneon.cli.main(["skills", str(skills_dir), "--no-packs"]) == 1
    captured = capsys.readouterr()
    assert "problem:" in captured.err and "is not valid" in captured.err
    assert "1 skill, 1 problem" in captured.out
