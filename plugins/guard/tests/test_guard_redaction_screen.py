"""The one-pass screen in front of the redactions never changes what they mask."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bandoneon_guard import Redaction
from bandoneon_guard.enforce import Enforcer
from bandoneon_guard.policy import Policy
from bandoneon_guard.screen import Screen, required_texts
from bandoneon_guard.secrets import DEFAULT_SECRETS

# Pieces of every default secret shape, and of text that only looks like one, mixed with noise.
_PIECES = st.sampled_from(
    [
        "sk-", "sk-ant-", "proj-", "AKIA", "ghp_", "github_pat_", "glpat-", "xoxb-", "eyJ", ".eyJ", "-----BEGIN ",
        "RSA ", "PRIVATE KEY-----", "-----END ", "postgresql://", "admin:", "hunter2@", "https://hooks.slack.com/services/",
        "a" * 20, "Z9" * 10, "0123456789abcdef" * 3, "-", "_", ":", "@", "/", " ", "\n",
    ]
)
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=30).map("".join)


def _one_by_one(redactions, text: str) -> str:
    for redaction in redactions:
        text = redaction.apply(text)
    return text


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_the_screen_masks_exactly_what_the_patterns_one_by_one_mask(text):
    enforcer = Enforcer(Policy(redactions=DEFAULT_SECRETS), label="guard")
    assert enforcer.redact(text) == _one_by_one(DEFAULT_SECRETS, text)


def test_patterns_that_cannot_be_joined_are_applied_one_by_one():
    doubled = Redaction(name="doubled", pattern=r"(\w)\1{3}", replacement="[x]")  # a backreference
    redactions = (*DEFAULT_SECRETS, doubled)
    text = "aaaa and sk-" + "b" * 24
    assert Enforcer(Policy(redactions=redactions), label="guard").redact(text) == "[x] and [openai-key masked]" == _one_by_one(redactions, text)


# User patterns of every shape the screen reads: literals inside groups and branches, repeats,
# case-insensitive parts (which it must not rely on), and patterns with no literal at all.
_USER_PATTERNS = (
    r"\b\d{8}[A-Z]\b",
    r"(?i)secret-[a-z]+",
    r"(?i:tok)en=\w+",
    r"(?:api|auth)_key=[^\s&]+",
    r"id(?:-x|_y|z)+\d",
    r"[ab]c(?:de|f)[gh]",
    r"x{2,}y",
    r"(a|bc)(?=d)e",
)
_USER_PIECES = st.sampled_from(["TOKEN=", "token=", "Secret-", "api_key=", "auth_key=", "id-x", "_y", "z", "bcf", "acdeg", "xxy", "ad", "ade", "12345678", "Z"])
_USER_TEXT = st.lists(st.one_of(_USER_PIECES, _PIECES, st.text(max_size=6)), max_size=25).map("".join)


@settings(max_examples=400, deadline=None)
@given(_USER_TEXT)
def test_the_screen_passes_only_text_no_pattern_matches(text):
    redactions = (*DEFAULT_SECRETS, *(Redaction(name=f"user-{i}", pattern=p, replacement="[x]") for i, p in enumerate(_USER_PATTERNS)))
    if any(r.apply(text) != text for r in redactions):
        assert Screen(redactions).may_match(text)
    assert Enforcer(Policy(redactions=redactions), label="guard").redact(text) == _one_by_one(redactions, text)


def test_the_needles_of_the_default_secrets_are_literal_texts_of_their_matches():
    assert required_texts(r"\bsk-ant-[A-Za-z0-9_-]{20,}") == {"sk-ant-"}
    assert required_texts(r"\b([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*):[^/\s@]+@") == {"://"}
    assert required_texts(r"(?i)secret") is None
    assert required_texts(r"\b\d{8}[A-Z]\b") is None


@settings(max_examples=200, deadline=None)
@given(_TEXT, st.sampled_from([0, 150, 199, 200, 201, 5000]))
def test_the_screen_is_the_same_on_short_and_long_text(text, padding):
    """Short texts are screened with one regex and long ones needle by needle: both must agree."""
    padded = "." * padding + text
    enforcer = Enforcer(Policy(redactions=DEFAULT_SECRETS), label="guard")
    assert enforcer.redact(padded) == _one_by_one(DEFAULT_SECRETS, padded)


_LITERALS = st.lists(st.text(alphabet="ab-_:.xyz", min_size=1, max_size=6), min_size=1, max_size=12, unique=True)


@settings(max_examples=300, deadline=None)
@given(_LITERALS, st.text(alphabet="ab-_:.xyz ", max_size=40))
def test_the_screen_finds_every_literal_of_an_overlapping_set(literals, text):
    """Needles sharing prefixes (``ab``, ``abc``, ``a-``) are looked for as one factored regex:
    a text holding any of them must reach the patterns, on short and on long text."""
    redactions = tuple(Redaction(name=f"literal-{i}", pattern=re.escape(literal), replacement="[x]") for i, literal in enumerate(literals))
    screen = Screen(redactions)
    for checked in (text, text + " " * 300):
        if any(literal in checked for literal in literals):
            assert screen.may_match(checked)
