"""`bandoneon trace show` on a trace file from someone else: hostile text is shown, never obeyed
(no terminal escapes, no tags or attributes in the page), a damaged file names its bad line, and
cycles, duplicate ids and deep nesting still show every span once."""

import argparse
import html
import io
import json
import re
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import bandoneon
import pytest
from bandoneon_tracing import Span, read_jsonl
from bandoneon_tracing.show import DEEPEST_INDENT, render_html, render_text, show_command
from hypothesis import given, settings
from hypothesis import strategies as st

TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "span", "details", "summary", "div", "dl", "dt", "dd"}
ATTRIBUTES = {"lang", "charset", "name", "content", "class", "style", "data-kind", "data-status", "title"}
NASTY = ["<", ">", "&", "'", '"', "\x1b", "\x1b[2J", "\x9b", "\x07", "\r", "\n", "\t", "\x00", "\x7f", "\u202e", "\u2066", "\ud800", "\udfff", "<script>", "' onmouseover='x"]

# Every code point, lone surrogates included (the JSON file writes them as \ud800 escapes).
hostile_text = st.lists(st.one_of(st.text(st.characters(exclude_categories=()), max_size=4), st.sampled_from(NASTY)), max_size=8).map("".join)
ids = st.one_of(hostile_text, st.sampled_from(["a", "b", "c"]))  # a small pool: duplicates and cycles
times = st.floats(allow_nan=False, allow_infinity=False)
values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), hostile_text),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_text, inner, max_size=3),
    max_leaves=6,
)
summary_keys = st.sampled_from(["bandoneon.cost", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "bandoneon.retries", "bandoneon.stop_reason"])
spans = st.builds(
    Span,
    name=hostile_text,
    kind=st.one_of(st.sampled_from(["run", "turn", "model", "tool"]), hostile_text),
    trace_id=st.one_of(hostile_text, st.just("t")),
    span_id=ids,
    parent_id=st.one_of(st.none(), ids),
    start=times,
    end=st.one_of(st.none(), times),
    status=st.sampled_from(["ok", "error"]),
    error=st.one_of(st.none(), hostile_text),
    attributes=st.dictionaries(st.one_of(summary_keys, hostile_text), values, max_size=5),
)


class PageParser(HTMLParser):
    """Every tag and attribute of a page, and the text of each span label."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.labels: list[str] = []
        self._in_label = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes.extend(attrs)
        if tag == "span" and ("class", "label") in attrs:
            self._in_label = True
            self.labels.append("")

    def handle_endtag(self, tag):
        self._in_label = False

    def handle_data(self, data):
        if self._in_label:
            self.labels[-1] += data


def write(path: Path, trace: list[Span]) -> None:
    path.write_text("".join(json.dumps(span.to_json()) + "\n" for span in trace), encoding="utf-8")


def show(path: Path, page: Path | None = None) -> tuple[int, str]:
    out = io.StringIO()
    code = show_command(argparse.Namespace(file=str(path), html=None if page is None else str(page), trace=None), out)
    return code, out.getvalue()


def parse(page: str) -> PageParser:
    parser = PageParser()
    parser.feed(page)
    parser.close()
    return parser


def rows(output: str) -> list[str]:
    """The span rows of the terminal view (a trace's header starts with "trace", rows with two spaces)."""
    return [line for line in output.splitlines() if line.startswith("  ")]


@settings(max_examples=150, deadline=None)
@given(st.lists(spans, min_size=1, max_size=8))
def test_hostile_spans_are_shown_never_obeyed(trace):
    with tempfile.TemporaryDirectory() as folder:
        path, page = Path(folder) / "hostile.jsonl", Path(folder) / "hostile.html"
        write(path, trace)
        code, output = show(path, page)
        assert code == 0
        assert bandoneon.for_terminal(output) == output  # nothing a terminal would act on
        assert len(rows(output)) == len(trace)  # a newline in a name draws no row of its own
        parsed = parse(page.read_text(encoding="utf-8"))
        names = [span.name for span in read_jsonl(path)]  # as JSON carries them: it pairs adjacent lone surrogates
    assert set(parsed.tags) <= TAGS
    assert {name for name, _ in parsed.attributes} <= ATTRIBUTES
    assert {value for name, value in parsed.attributes if name == "data-status"} <= {"ok", "error"}
    assert sorted(parsed.labels) == sorted(map(bandoneon.for_terminal, names))


@settings(max_examples=150, deadline=None)
@given(spans)
def test_a_span_reads_back_as_it_was_written(span):
    """Compared as JSON: a JSON file pairs two adjacent lone surrogates into one character."""
    data = json.loads(json.dumps(span.to_json()))
    assert Span.from_json(data).to_json() == data


GOOD = Span("run", "run", "t", "r", None, 1.0, 2.0).to_json()


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("status", "' onmouseover='alert(1)", "status is neither"),
        ("status", None, "status is neither"),
        ("kind", 7, "kind must be a string, not int"),
        ("start", float("nan"), "start is not a finite number"),
        ("end", float("inf"), "end is not a finite number"),
        ("start", 10**400, "start is not a finite number"),
        ("parent_id", ["r"], "parent_id must be a string, not list"),
        ("error", {"x": 1}, "error must be a string, not dict"),
        ("attributes", ["x"], "attributes must be an object, not list"),
        ("start", "\x1b]52;c;aGk=\x07", "could not convert"),
    ],
)
def test_a_bad_field_names_the_file_and_line(tmp_path, capsys, field, value, why):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps({**GOOD, field: value}) + "\n")
    assert show(path) == (1, "")
    err = capsys.readouterr().err
    assert f"{path}:2: not a span" in err and why in err
    assert bandoneon.for_terminal(err) == err  # a bad value quoted in the message is not obeyed


def test_a_line_that_is_not_utf8_or_nests_too_deep_is_named(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n" + json.dumps({**GOOD, "name": "x"}).encode().replace(b'"x"', b'"\xff"') + b"\n")
    assert show(path) == (1, "")
    assert f"{path}:2: not UTF-8" in capsys.readouterr().err
    path.write_text(json.dumps(GOOD) + "\n" + "[" * 100_000 + "\n")
    assert show(path) == (1, "")
    err = capsys.readouterr().err
    assert f"{path}:2: not a span" in err and "nested too deeply" in err


def test_a_lone_surrogate_and_escapes_are_written_out_in_both_views(tmp_path):
    path, page = tmp_path / "t.jsonl", tmp_path / "t.html"
    write(path, [Span("\ud800\x1b[31mred\u202e", "tool", "t", "s", None, 1.0, 2.0, status="error", error="\r\x1b]0;title\x07")])
    code, output = show(path, page)
    assert code == 0  # read back, the lone surrogate is U+FFFD (bandoneon.loads_bounded)
    assert "\ufffd\\x1b[31mred\\u202e" in output and "\\x1b]0;title\\x07" in output
    assert "\ufffd\\x1b[31mred\\u202e" in page.read_text(encoding="utf-8")
    in_memory = Span("\ud800\x1b[31mred", "tool", "t", "s", None, 1.0, 2.0)
    assert "\\ud800\\x1b[31mred" in render_text([in_memory]) and "\\ud800\\x1b[31mred" in render_html([in_memory])


def test_attributes_of_the_wrong_type_are_shown_as_text(tmp_path):
    attributes = {"bandoneon.cost": "free", "gen_ai.usage.input_tokens": ["x"], "bandoneon.retries": {"n": 1}, "bandoneon.stop_reason": None}
    trace = [Span("run", "run", "t", "r", None, 1.0, 2.0, attributes=attributes), Span("chat", "model", "t", "m", "r", 1.0, 2.0, attributes={"bandoneon.cost": 10**400})]
    output = render_text(trace)
    assert "cost=free" in output and "['x'] in / 0 out" in output and "{'n': 1} retries" in output and "stop=None" in output
    assert f"cost={10**400}" in output
    assert "cost=free" in render_html(trace)


def labels(trace):
    """The span names of the terminal view, top to bottom, and of the page."""
    text = [row[2:50].strip() for row in rows(render_text(trace))]
    return text, parse(render_html(trace)).labels


def test_cycles_self_parents_and_duplicate_ids_show_every_span_once():
    trace = [
        Span("root", "run", "t", "r", None, 1.0, 9.0),
        Span("second", "turn", "t", "x", "r", 3.0, 4.0),
        Span("first", "turn", "t", "x", "r", 2.0, 3.0),  # the same id as "second"
        Span("under x", "model", "t", "u", "x", 2.5, 2.6),
        Span("itself", "tool", "t", "s", "s", 5.0, 6.0),  # its own parent: a root
        Span("cycle b", "tool", "t", "b", "a", 8.0, 8.5),
        Span("cycle a", "tool", "t", "a", "b", 7.0, 7.5),
    ]
    text, page = labels(trace)
    assert page == ["root", "first", "under x", "second", "itself", "cycle a", "cycle b"]
    assert text == page
    depths = [len(row[2:]) - len(row[2:].lstrip()) for row in rows(render_text(trace))]
    assert depths == [0, 2, 4, 2, 0, 0, 2]


def test_a_5000_deep_chain_shows_in_order_with_bounded_indent(tmp_path):
    path, page = tmp_path / "deep.jsonl", tmp_path / "deep.html"
    write(path, [Span(f"s{n}", "tool", "t", f"s{n}", f"s{n - 1}" if n else None, float(n), n + 1.0) for n in range(5000)])
    code, output = show(path, page)
    assert code == 0
    document = page.read_text()
    assert parse(document).labels == [f"s{n}" for n in range(5000)]
    assert [row[2:50].strip() for row in rows(output)] == [f"s{n}" for n in range(5000)]
    paddings = {float(p) for p in re.findall(r"padding-left:([\d.]+)em", document)}
    assert max(paddings) == pytest.approx(DEEPEST_INDENT * 1.2)
    assert max(len(row) - len(row.lstrip()) for row in rows(output)) == 2 + 2 * DEEPEST_INDENT


def test_an_html_attribute_cannot_be_injected_through_a_span():
    """The review's case: a status (or any value) that closes the attribute and opens another."""
    span = Span("' onmouseover='alert(1)", "x' onclick='y", "t", "s", None, 1.0, 2.0, attributes={"'><script>": "\"><script>alert(1)</script>"})
    page = parse(render_html([span]))
    assert "script" not in page.tags
    assert not [name for name, _ in page.attributes if name.startswith("on")]
    assert html.escape("' onmouseover='alert(1)") in render_html([span])
