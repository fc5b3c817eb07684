"""`bandoneon tools check` measures what a tool returns (level 3: "Measure the output")."""

import json
import textwrap

import bandoneon
import pytest
from bandoneon.cli import main as cli
from hypothesis import given, settings
from hypothesis import strategies as st

LIBRARY = textwrap.dedent('''
    import bandoneon

    @bandoneon.tool(examples=[{"order_id": "A-1"}, {"order_id": "A-2"}])
    def find_order(order_id: str) -> str:
        """Find one order by its id and return its status line, like 'A-1: shipped'.

        Args:
            order_id: the order id, like A-1
        """
        return f"{order_id}: shipped"

    @bandoneon.tool(examples=[{}])
    def export_orders() -> str:
        """Every order ever placed, one line each, with every field of every order."""
        return "\\n".join(f"A-{n}: shipped to Calle Falsa 123, Springfield, paid by card" for n in range(2000))

    def search_orders(text: str, limit: int = 10) -> list:
        """Search orders."""
        return [f"A-{n}" for n in range(limit)]

    @bandoneon.tool
    def refund(order_id: str) -> str:
        """Refund an order in full and return the refund id; irreversible.

        Args:
            order_id: the order id, like A-1
        """
        raise bandoneon.ToolError(f"{order_id} was never paid; nothing to refund")

    def broken(text: str) -> str:
        """Crashes."""
        return {}["missing"]
''')


@pytest.fixture
def library(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders.py").write_text(LIBRARY)
    return tmp_path


def test_examples_are_run_and_a_big_result_is_a_warning_that_says_how_to_shrink(library, capsys):
    assert cli(["tools", "check", "orders.py"]) == 0, "a big result is a warning, not an error"
    out = capsys.readouterr().out
    assert 'SIZE    find_order({"order_id": "A-1"}): result of 12 characters, ~3 tokens' in out
    assert 'SIZE    find_order({"order_id": "A-2"})' in out
    big = [line for line in out.splitlines() if line.startswith("WARNING export_orders({})")]
    assert len(big) == 1
    assert "of the window (limit 5%)" in big[0] and "paginate" in big[0] and "summarise" in big[0] and "return a handle" in big[0]
    assert "3 results measured: 0 errors, 1 warning" in out
    assert cli(["tools", "check", "orders.py", "--strict"]) == 1


def test_window_and_share_are_configurable(library, capsys):
    assert cli(["tools", "check", "orders.py:export_orders", "--window", "1000000"]) == 0
    assert "WARNING" not in capsys.readouterr().out
    assert cli(["tools", "check", "orders.py:find_order", "--window", "100", "--max-share", "0.01", "--strict"]) == 1
    out = capsys.readouterr().out
    assert "~3 tokens (3.0% of a 100-token window)" in out and "limit 1%" in out


def test_sample_runs_a_plain_function_on_json_arguments(library, capsys):
    assert cli(["tools", "check", "--sample", "orders.py:search_orders", '{"text": "A", "limit": 3}']) == 0
    out = capsys.readouterr().out
    text = json.dumps(["A-0", "A-1", "A-2"])
    assert f'SIZE    search_orders({{"text": "A", "limit": 3}}): result of {len(text)} characters' in out
    assert "0 tools checked, 1 result measured" in out


def test_a_tool_error_is_measured_as_the_error_the_model_reads(library, capsys):
    assert cli(["tools", "check", "--sample", "orders.py:refund", '{"order_id": "A-1"}']) == 0
    assert f"error result of {len('A-1 was never paid; nothing to refund')} characters" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('{"order_id": 5}', "the sample arguments do not fit the tool"),
        ('{"nope": 1}', "the sample arguments do not fit the tool"),
    ],
)
def test_sample_arguments_that_do_not_fit_are_an_error(library, capsys, arguments, message):
    assert cli(["tools", "check", "--sample", "orders.py:find_order", arguments]) == 1
    assert message in capsys.readouterr().out


def test_a_tool_that_crashes_on_its_sample_is_an_error(library, capsys):
    assert cli(["tools", "check", "--sample", "orders.py:broken", '{"text": "x"}']) == 1
    out = capsys.readouterr().out
    assert "ERROR   broken(" in out and "the tool raised KeyError" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sample", "orders.py:find_order", "{broken"], "the arguments are not JSON"),
        (["--sample", "orders.py:find_order", "[1]"], "must be one JSON object"),
        (["--sample", "orders.py", "{}"], "name one tool or function"),
        (["orders.py", "--window", "0"], "--window must be a positive"),
        (["orders.py", "--max-share", "2"], "--max-share in (0, 1]"),
        ([], "name the tools to check"),
    ],
)
def test_bad_options_are_one_clear_line(library, capsys, argv, message):
    assert cli(["tools", "check", *argv]) == 1
    assert message in capsys.readouterr().err


def test_examples_must_be_argument_dicts():
    with pytest.raises(TypeError, match="each of examples= is the arguments of one call"):

        @bandoneon.tool(examples=["A-1"])
        def find(order_id: str) -> str:
            """Find an order."""
            return order_id


@settings(max_examples=30, deadline=None)
@given(arguments=st.dictionaries(st.text(max_size=8), st.one_of(st.none(), st.integers(), st.text(max_size=20)), max_size=4))
def test_any_json_object_as_sample_arguments_gives_a_measurement_or_a_clear_error(arguments):
    """Hostile sample arguments never crash the check: it measures, or names what does not fit."""
    from bandoneon.toolcheck import measure_tool

    @bandoneon.tool
    def echo(text: str) -> str:
        """Say the text back, unchanged, so its size can be measured."""
        return text

    findings = measure_tool(echo, arguments)
    assert findings and findings[0].severity in ("size", "error")
    if findings[0].severity == "error":
        assert "do not fit the tool" in findings[0].message
