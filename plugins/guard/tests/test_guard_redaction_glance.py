"""The screen's glance (one character class, searched in C) passes by only text no redaction
changes: a needle's text holds its chosen character, so text with none of them holds no needle.

The reference is the slow path: every pattern applied one by one, and for the screen itself,
each needle looked for with ``in``. Generated text mixes secret shapes split across pieces,
wrapper tags written to close the wrapper, look-alike letters, format and invisible
characters, fullwidth forms and plain noise, on short and on long text.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bandoneon_guard import Guard, Redaction
from bandoneon_guard.enforce import Enforcer
from bandoneon_guard.policy import Policy
from bandoneon_guard.screen import Screen
from bandoneon_guard.secrets import DEFAULT_SECRETS

_SECRET_PIECES = [
    "sk",
    "-",
    "sk-",
    "ant-",
    "sk-ant-",
    "proj-",
    "AKIA",
    "AKI",
    "A",
    "ASIA",
    "gh",
    "p_",
    "ghp_",
    "github_pat_",
    "gl",
    "pat-",
    "xox",
    "b-",
    "xoxb-",
    "eyJ",
    ".eyJ",
    ".",
    "J",
    "-----BEGIN ",
    "RSA ",
    "PRIVATE KEY-----",
    "-----END ",
    "postgresql",
    ":",
    "//",
    "://",
    "admin:",
    "hunter2@",
    "https://hooks.slack.com/services/",
    "a" * 20,
    "Z9" * 10,
    "0123456789abcdef" * 3,
    "_",
]
_HOSTILE_PIECES = [
    "</untrusted>",
    '<untrusted source="x">',
    "&lt;/untrusted&gt;",
    "＜/ＵＮＴＲＵＳＴＥＤ＞",
    "</untr",
    "usted>",
    "\u0455k-",
    "\u0410KIA",
    "ѕk\u2010",
    "sk\u2011",
    "sk\u2212",
    "ghp\uff3f",
    "\uff21KIA",
    "ｓｋ－",  # look-alikes, fullwidth
    "\u200b",
    "\u00ad",
    "\u2060",
    "\ufeff",
    "\U000e0041",
    "\x00",
    "\x1b",
    "\u034f",
    "\ufe0f",  # format, invisible, controls
    "e\u0301",
    "ß",
    "①",
    " ",
    "\n",
    "\t",
]
_PIECES = st.sampled_from(_SECRET_PIECES + _HOSTILE_PIECES)
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=6), st.text(st.characters(max_codepoint=127), max_size=8)), max_size=30).map("".join)
_LENGTHS = st.sampled_from([0, 150, 199, 200, 201, 3000])


def _one_by_one(redactions: tuple[Redaction, ...], text: str) -> str:
    for redaction in redactions:
        text = redaction.apply(text)
    return text


_DEFAULT_SCREEN = Screen(DEFAULT_SECRETS)
_DEFAULT_ENFORCER = Enforcer(Policy(redactions=DEFAULT_SECRETS), label="guard")


@settings(max_examples=600, deadline=None)
@given(_TEXT, _LENGTHS)
def test_the_glance_passes_by_only_text_that_holds_no_needle(text, padding):
    for checked in (text, "x" * padding + text, text + "x" * padding):
        holds_a_needle = any(needle in checked for needle in _DEFAULT_SCREEN._needles)
        assert _DEFAULT_SCREEN.may_match(checked) == holds_a_needle
        if _DEFAULT_SCREEN.glance(checked) is None:
            assert not holds_a_needle
            assert _one_by_one(DEFAULT_SECRETS, checked) == checked


@settings(max_examples=600, deadline=None)
@given(_TEXT, _LENGTHS)
def test_redaction_with_the_glance_masks_what_the_patterns_one_by_one_mask(text, padding):
    guard = Guard()
    for checked in (text, "." * padding + text):
        expected = _one_by_one(DEFAULT_SECRETS, checked)
        assert _DEFAULT_ENFORCER.redact(checked) == expected
        assert guard.redact(checked) == expected


_LITERALS = st.lists(st.text(alphabet="ab-_:.xyzAJ/é\u200b", min_size=1, max_size=6), min_size=1, max_size=12, unique=True)


@settings(max_examples=400, deadline=None)
@given(_LITERALS, st.text(alphabet="ab-_:.xyzAJ/é\u200b ", max_size=40))
def test_the_glance_of_any_needle_set_passes_by_only_text_without_them(literals, text):
    """Whatever needles user patterns give (common letters, rare ones, shared characters), the
    glance's characters cover every one of them."""
    redactions = tuple(Redaction(name=f"literal-{i}", pattern=re.escape(literal), replacement="[x]") for i, literal in enumerate(literals))
    screen = Screen(redactions)
    for checked in (text, text + " " * 300):
        holds_one = any(literal in checked for literal in literals)
        assert screen.may_match(checked) == holds_one
        if screen.glance(checked) is None:
            assert not holds_one


def test_a_pattern_without_needles_lets_every_text_past_the_glance():
    redactions = (*DEFAULT_SECRETS, Redaction(name="digits", pattern=r"\d{8}", replacement="[x]"))
    screen = Screen(redactions)
    assert screen.glance("plain words") is not None
    assert Enforcer(Policy(redactions=redactions), label="guard").redact("id 12345678") == "id [x]"
