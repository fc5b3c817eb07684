"""``bandoneon run`` when a terminal tool's answer holds a class instance (a dataclass
parameter): printed as JSON objects, with and without ``--json``, never a traceback."""

from __future__ import annotations

import json

import pytest
from bandoneon.cli import main as cli
from bandoneon.testing import Reply

TOOLS = '''
import dataclasses
import bandoneon


@dataclasses.dataclass
class Seat:
    row: int
    letter: str


@bandoneon.tool(terminal=True)
def book(seat: Seat) -> str:
    """Book one seat."""
    return "booked"
'''


@pytest.fixture
def booking(mock_llm, here):
    (here / "seats.py").write_text(TOOLS)
    mock_llm.add(Reply(tool_calls=[("book", {"seat": {"row": 3, "letter": "A"}})]))
    return ["run", "book 3A", "--base-url", mock_llm.base_url, "--tools", "seats.py"]


def test_run_json_prints_an_answer_with_a_class_in_it_as_an_object(booking, capsys):
    assert cli([*booking, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["stop"], data["answer"]) == ("terminal_tool", {"seat": {"row": 3, "letter": "A"}})


def test_run_prints_an_answer_with_a_class_in_it_as_json(booking, capsys):
    assert cli(booking) == 0
    assert json.loads(capsys.readouterr().out) == {"seat": {"row": 3, "letter": "A"}}
