"""A secret that the 4000-character cut of a long attribute runs through is still redacted.

Span text (tool arguments, outputs, prompts) is cut at 4000 characters when drafted and
redacted later, when the trace is built: the rules must see the secret whole, or its first
part (most of an API key) reaches every exporter.
"""

from __future__ import annotations

import bandoneon
from bandoneon.testing import ScriptedModel, call
from bandoneon_tracing import Tracing
from hypothesis import given, settings
from hypothesis import strategies as st

SECRET = "sk-" + "a1b2c3d4e5" * 4
RULE = r"sk-[a-z0-9]{40}"


@bandoneon.tool
def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say
    """
    return text


def traced_attributes(text: str, **options) -> list[str]:
    model = ScriptedModel(call("echo", text=text), text)
    tracing = Tracing(redact=[RULE], **options)
    agent = bandoneon.Agent(model, tools=[echo], plugins=[tracing], context_files=False)
    agent.run_sync(text)
    return [value for span in tracing.traces[-1] for value in span.attributes.values() if isinstance(value, str)]


def test_a_secret_cut_in_half_by_the_length_limit_is_redacted():
    text = "x" * 3970 + SECRET + "y" * 100  # the cut at 4000 falls inside the secret
    values = traced_attributes(text)
    assert not [v for v in values if "sk-a1b2" in v]
    output = next(v for v in values if v.startswith("xxx") and "more characters]" in v)
    assert output.startswith("x" * 3970 + "[REDACTED]") and len(output) < 4100


@settings(max_examples=40)
@given(before=st.integers(min_value=3900, max_value=4010), after=st.integers(min_value=0, max_value=300))
def test_no_part_of_a_secret_near_the_cut_reaches_a_span(before, after):
    values = traced_attributes("x" * before + SECRET + "y" * after)
    assert not [v for v in values if "sk-a1b" in v]
