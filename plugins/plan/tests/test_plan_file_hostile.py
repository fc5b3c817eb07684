"""A plan file written by hand, or by someone else, is read within bounds: whatever it holds is
a ConfigError naming the file, never a crash of the interpreter's recursion."""

import bandoneon
import pytest
from bandoneon_plan import Plan

DEEP = 100_000


@pytest.mark.parametrize(
    "content",
    ["[" * DEEP + "]" * DEEP, '{"items": ' + "[" * DEEP + "]" * DEEP + "}", '{"items": [' + '{"a":' * DEEP + "1" + "}" * DEEP + "]}"],
    ids=["deep-list", "deep-items", "deep-objects"],
)
def test_a_deeply_nested_plan_file_is_a_clear_error(tmp_path, content):
    path = tmp_path / "plan.json"
    path.write_text(content)
    with pytest.raises(bandoneon.ConfigError, match="not a plan"):
        Plan(plan_file=str(path))
    compile("x = 1", "<after>", "exec")  # the interpreter's depth bookkeeping is intact
