"""Outside text in Markdown someone's viewer renders is read as it is: ``bandoneon.markdown_text``
(one line: a list item, a table cell) and ``bandoneon.markdown_code`` (a block), checked by
rendering them with a CommonMark parser (markdown-it-py, with GFM tables and strikethrough)."""

from __future__ import annotations

import bandoneon
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

markdown_it = pytest.importorskip("markdown_it")

#: What a rendered document may hold when outside text went in through the helpers.
INERT = {"paragraph_open", "paragraph_close", "inline", "text", "softbreak", "fence", "bullet_list_open", "bullet_list_close", "list_item_open", "list_item_close"}

#: Text weighted towards Markdown syntax: images and links, HTML, code spans, fences, tables.
markdownish = st.lists(
    st.one_of(
        st.characters(blacklist_categories=("Cs",)),
        st.sampled_from(["![", "](", "https://evil.example/?q=", "<img src=x>", "`", "```", "~~~", "|", "\n", "#", "*", "_", "[", "]", "\\", "<", ">", "&amp;", "www.evil.example"]),
    )
).map("".join)


def _tokens(markdown: str) -> list[object]:
    parser = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])
    flat = []
    for token in parser.parse(markdown):
        flat.append(token)
        flat.extend(token.children or ())
    return flat


@settings(max_examples=400, deadline=None)
@given(markdownish)
def test_a_line_of_outside_text_renders_as_plain_text(text):
    rendered = _tokens(f"- {bandoneon.markdown_text(text)}")
    assert {token.type for token in rendered} <= INERT
    shown = "".join(token.content for token in rendered if token.type == "text")
    assert shown == " ".join(text.split()).replace("\x00", "\ufffd")


@settings(max_examples=400, deadline=None)
@given(markdownish)
def test_a_block_of_outside_text_is_one_code_block_holding_it_exactly(text):
    text = text.replace("\r", "")  # CommonMark reads CR as a line ending
    rendered = _tokens(bandoneon.markdown_code(text))
    assert [token.type for token in rendered] == ["fence"]
    assert rendered[0].content == (text + "\n").replace("\x00", "\ufffd")


def test_the_fence_outgrows_the_longest_run_of_backticks():
    assert bandoneon.markdown_code("a ````` b", "json").splitlines() == ["``````json", "a ````` b", "``````"]
