"""Level 7's example runs end to end against a scripted model, so it cannot rot."""

from __future__ import annotations

from pathlib import Path

from bandoneon.testing import ScriptedModel, call, load_script
from bandoneon_compaction import is_note

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "level_07_compaction.py"


def load_example():
    module = load_script(EXAMPLE)
    return module


def test_the_bike_shop_chat_compacts_and_keeps_the_return_receipt(capsys):
    model = ScriptedModel(
        call("get_order", order=4471),
        "Order #4471 has the 700c front wheel WH-700C-F. Sorry it arrived bent!",
        call("search_parts", query="700c front wheel"),
        "Yes: WH-700C-F is in stock (4).",
        call("create_return", order=4471, part="WH-700C-F"),
        "Return RMA-4471-1 is open; the new wheel ships tomorrow.",
    )
    result = load_example().main(model)
    model.assert_all_used()
    out = capsys.readouterr().out
    assert result.ok and result.text == "Return RMA-4471-1 is open; the new wheel ships tomorrow."
    assert "compaction:" in out and "truncated" in out
    last = model.requests[-1].messages
    assert last[0].content == "Hi! My order #4471 came with a bent front wheel. Can you help?"
    receipt = [m for m in last if m.name == "create_return"]
    assert receipt and receipt[0].content.startswith("Return RMA-4471-1 opened") and not is_note(receipt[0].content)
    assert any(is_note(m.content) for m in last if m.name == "get_order")
