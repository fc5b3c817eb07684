"""``bandoneon.visible_text``: outside text as a person sees it, before a model reads it.

The reference is the definition, one character at a time: controls but tab and newline,
Unicode's format, surrogate, private-use and unassigned categories, and the other
default-ignorable code points (Unicode's DerivedCoreProperties) are dropped; every other
character stays, in order.
"""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

import bandoneon

#: The default-ignorable code points whose category is neither Cf nor Cn (Unicode 15).
_OTHER_IGNORABLES = {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F, 0x3164, 0xFFA0, *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)}


def hidden(char: str) -> bool:
    category = unicodedata.category(char)
    if category == "Cc":
        return char not in "\t\n"
    return category in {"Cf", "Cs", "Co", "Cn"} or ord(char) in _OTHER_IGNORABLES


_PIECES = st.sampled_from(
    [
        "\t", "\n", "\r", "\x00", "\x1b[2J", "\x7f", "\x85", "\x9b",  # controls
        "\u00ad", "\u200b", "\u200d", "\u202e", "\u2066", "\ufeff", "\U000e0041", "\U0001d173",  # format
        "\u034f", "\u3164", "\ufe0f", "\U000e0100",  # other default-ignorables
        "\ue000", "\U000f0000", "\ufdd0", "\U0010ffff",  # private use, noncharacters
        "é", "e\u0301", "ß", "中文", "😀", "ＡＢＣ", "<untrusted>",
    ]
)
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=20).map("".join)


@given(_TEXT)
@settings(max_examples=500, deadline=None)
def test_visible_text_drops_exactly_what_a_person_does_not_see(text):
    assert bandoneon.visible_text(text) == "".join(c for c in text if not hidden(c))


@given(st.text(st.characters(max_codepoint=127)))
def test_ascii_text_keeps_everything_but_its_controls(text):
    assert bandoneon.visible_text(text) == "".join(c for c in text if c in "\t\n" or " " <= c < "\x7f")


def test_what_is_dropped_leaves_the_words_it_hid():
    hostile = "pay\u200b \u202eto\u2066 \U000e0073\U000e0065\U000e006e\U000e0064 evil\x1b]52;c;eA==\x07"
    assert bandoneon.visible_text(hostile) == "pay to  evil]52;c;eA=="  # the tags spelled "send"
