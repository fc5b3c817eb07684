"""`bandoneon skills` runs in CI on skills from elsewhere (a pull request, a third-party pack):
what a SKILL.md or a folder name holds is shown on the terminal, never obeyed by it."""

from __future__ import annotations

import json
import re

import bandoneon.cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: What a terminal acts on instead of drawing: C0 controls but tab and newline, DEL, C1, bidi controls.
OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
hostile = st.lists(
    st.one_of(st.sampled_from(["\x1b[2J", "\x1b]52;c;cHduZWQ=\x07", "\r", "\x9b31m", "\u202e", "\x08"]), st.characters(exclude_categories=("Cs",))),
    min_size=1,
    max_size=20,
).map(lambda parts: "x" + "".join(parts))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(description=hostile, folder=hostile, tool=hostile)
def test_the_catalog_and_its_problems_reach_the_terminal_as_text(tmp_path_factory, capsys, description, folder, tool):
    root = tmp_path_factory.mktemp("skills")
    (root / "cakes").mkdir()
    (root / "cakes" / "SKILL.md").write_text(
        f"---\nname: cakes\ndescription: {json.dumps(description)}\nallowed-tools: {json.dumps([tool])}\n---\n\nBake.\n",
        encoding="utf-8",
    )
    broken = root / folder.replace("/", "_").replace("\x00", "_")[:100]
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: other\ndescription: d\n---\n\nb\n", encoding="utf-8")  # wrong name: a problem
    bandoneon.cli.main(["skills", str(root), "--no-packs"])
    captured = capsys.readouterr()
    assert "cakes  (" in captured.out and "problem:" in captured.err
    assert not OBEYED.search(captured.out + captured.err)
