"""The one-pass screen in front of the redactions never changes what they mask."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bandoneon_guard import Redaction
from bandoneon_guard.enforce import Enforcer
from bandoneon_guard.policy import Policy
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
