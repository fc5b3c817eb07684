"""The short ways the guard reads outside text give exactly what the full reading gives.

ASCII text skips compatibility folding (NFKC leaves ASCII alone), and ``bandoneon.visible_text``
looks for the characters it drops among the text's distinct characters. The reference here is
the full reading done character by character, as it was before the short ways: over generated hostile text
(entities, controls, format and other invisible characters, fullwidth forms, look-alikes,
combining marks), both read the same text and find the same wrapper tags.
"""

from __future__ import annotations

import html
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

import bandoneon
from bandoneon_guard import mark_untrusted, wrapper_tags
from bandoneon_guard.marking import _TAG, _as_read


def full_reading(text: str) -> str:
    """Entities decoded until none is left, NFKC, then each character a person does not see
    removed, one character at a time."""
    while (decoded := html.unescape(text)) != text:
        text = decoded
    return "".join(c for c in unicodedata.normalize("NFKC", text) if bandoneon.visible_text(c))


_PIECES = st.sampled_from(
    [
        "<", ">", "/", "\\", "untrusted", "UNTRUSTED", "untr", "usted", " source=\"x\"", " ", "\n", "\t", "\r",
        "&lt;", "&amp;lt;", "&#60;", "&#x3c;", "&lt", "&gt;", "&#47;", "&#x200b;", "&#173;", "&#8203;", "&#xfeff;", "&amp;",
        "\x00", "\x01", "\x1b", "\x7f", "\x85", "\x9f",  # controls
        "\u00ad", "\u200b", "\u200d", "\u2060", "\u2066", "\ufeff", "\U000e0001", "\U000e0041", "\u0600", "\U0001d173",  # format (Cf)
        "\u034f", "\u115f", "\u3164", "\ufe0f", "\uffa0", "\U000e0100",  # other default-ignorables
        "＜", "﹤", "＞", "／", "ｕｎｔｒｕｓｔｅｄ", "\u1d1c", "\u0435", "\u03c5", "\u2039", "\u2215",  # fullwidth, look-alikes
        "e\u0301", "\u0301", "ﬁ", "①", "Ⅳ", "é", "ß", "ǅ", "\u212a",  # NFKC changes, combining marks
    ]
)
_HOSTILE = st.lists(st.one_of(_PIECES, st.text(max_size=6), st.text(st.characters(max_codepoint=127), max_size=8)), max_size=24).map("".join)


@given(_HOSTILE)
@settings(max_examples=600, deadline=None)
def test_the_short_readings_read_what_the_full_reading_reads(text):
    assert _as_read(text) == full_reading(text)


@given(_HOSTILE)
@settings(max_examples=300, deadline=None)
def test_wrapper_tags_and_marking_agree_with_the_full_reading(text):
    expected = ["close" if m.group(1) else "open" for m in _TAG.finditer(full_reading(text))]
    assert wrapper_tags(text) == expected
    wrapped = mark_untrusted(text, "web")
    assert wrapper_tags(wrapped) == ["open", "close"]
    if not expected:
        assert wrapped == f'<untrusted source="web">\n{text}\n</untrusted>'


@given(st.text(st.characters(max_codepoint=127)))
@settings(max_examples=300, deadline=None)
def test_any_ascii_text_is_read_as_the_full_reading_reads_it(text):
    assert _as_read(text) == full_reading(text)
