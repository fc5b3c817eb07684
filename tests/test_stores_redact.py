"""Every store keeps what the rules in force mask: session file, memory, traces, eval reports and
the audit log hold neither the secret the guard masks nor the ID the policy pack masks, while the
tool still receives its real argument. The model is a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import functools
import json

import bandoneon
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from bandoneon.testing import Reply, ScriptedModel

pytestmark = pytest.mark.usefixtures("example_pack")

KEY = "sk-proj-4fQ9Zt2Lm8Rw1Xk7Vb3Nc6Hd0Jg5Pa"  # the guard's default table masks it
ID_NUMBER = "30.123.456"  # the example pack masks "DNI 30.123.456"
SECRETS = (KEY, ID_NUMBER)
RECEIVED: list[str] = []


@bandoneon.tool(needs_approval=True)
def configure_billing(api_key: str) -> str:
    """Store the billing provider's API key for the customer."""
    RECEIVED.append(api_key)
    return f"Billing configured for Ana Pérez (DNI {ID_NUMBER}) with key {KEY}."


def assert_clean(label: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"the {label} keeps {secret!r}"


def test_every_store_holds_the_masked_text_and_the_tool_gets_the_real_argument(mock_llm, tmp_path):
    from bandoneon_guard import Guard
    from bandoneon_human import Human
    from bandoneon_memory import Memory
    from bandoneon_sessions import Sessions
    from bandoneon_tracing import Tracing

    mock_llm.add(
        Reply(tool_calls=[("remember", {"note": f"Ana (DNI {ID_NUMBER}) pays with key {KEY}"})]),
        Reply(tool_calls=[("configure_billing", {"api_key": KEY})]),
        Reply(text=f"Done: billing uses {KEY} for DNI {ID_NUMBER}."),
    )
    audit = tmp_path / "audit.jsonl"
    traces = tmp_path / "traces.jsonl"
    plugins = [
        Guard(),
        Human(channel=lambda request: True, audit_log=str(audit), ask_tool=None),
        Memory(mode="notes", path=str(tmp_path / "memory"), scope="ana"),
        Sessions(session_id="ana", path=str(tmp_path / "sessions")),
        Tracing(jsonl=str(traces)),
    ]
    agent = bandoneon.Agent(f"openai-compatible:mock@{mock_llm.base_url}", tools=[configure_billing], plugins=plugins, context_files=False)
    result = agent.run_sync(f"Set up billing for Ana, DNI {ID_NUMBER}, key {KEY}.")
    agent.close()
    assert result.ok
    assert RECEIVED == [KEY]  # the tool got the real argument
    stored = {
        "session file": "".join(p.read_text() for p in (tmp_path / "sessions").rglob("*") if p.is_file()),
        "memory store": "".join(p.read_text() for p in (tmp_path / "memory").rglob("*") if p.is_file()),
        "trace file": traces.read_text(),
        "audit log": audit.read_text(),
    }
    for label, text in stored.items():
        assert text, f"the {label} is empty: nothing was stored, so nothing was proved"
        assert_clean(label, text)
    assert "[openai-key masked]" in stored["session file"] and "DNI ***" in stored["memory store"]
    assert json.loads(audit.read_text().splitlines()[0])["outcome"] == "approved"


def test_a_prompt_with_an_image_keeps_no_secret_in_its_text_part(mock_llm, tmp_path):
    """A prompt of words and an image keeps its words twice (``content`` and a text part):
    both are masked before the session file and the trace get them."""
    from bandoneon_guard import Guard
    from bandoneon_sessions import Sessions
    from bandoneon_tracing import Tracing

    mock_llm.add(Reply(text="I see a receipt."))
    traces = tmp_path / "traces.jsonl"
    plugins = [Guard(), Sessions(session_id="ana", path=str(tmp_path / "sessions")), Tracing(jsonl=str(traces), capture_content=True)]
    agent = bandoneon.Agent(f"openai-compatible:mock@{mock_llm.base_url}", plugins=plugins, context_files=False)
    prompt = [f"Read this receipt for DNI {ID_NUMBER}, key {KEY}.", bandoneon.ImagePart("image/png", data=b"\x89PNG receipt")]
    result = agent.run_sync(prompt)
    agent.close()
    assert result.ok
    assert KEY.encode() in mock_llm.requests[0].body  # the model read the real words
    session = "".join(p.read_text() for p in (tmp_path / "sessions").rglob("*.jsonl"))
    assert session.count("[openai-key masked]") == 2  # content and the text part
    assert_clean("session file", session)
    assert_clean("trace file", traces.read_text())


def test_an_eval_report_holds_the_masked_output(tmp_path):
    from bandoneon_evals import Case, contains, evaluate
    from bandoneon_guard import Guard

    report = evaluate(
        [Case("leak", "What is the key?", {})],
        lambda: bandoneon.Agent(ScriptedModel(f"The key is {KEY}, for DNI {ID_NUMBER}."), plugins=[Guard()], context_files=False),
        [contains("The key is")],
        progress=False,
    )
    assert report.cases[0].pass_rate == 1.0  # the scorer judged the real output
    report.write_json(tmp_path / "report.json")
    assert_clean("eval report", (tmp_path / "report.json").read_text())
    assert_clean("eval report", report.markdown())


def test_a_kept_trace_keeps_the_packs_and_guards_rules_not_the_agent_and_is_masked_when_read():
    """The pack's and the guard's rules take the text alone, so a trace keeps them (not the
    agent) and is drafted, masked and built only when first read, after its agent is gone."""
    import gc
    import weakref

    from bandoneon_guard import Guard
    from bandoneon_tracing import Trace, Tracing

    tracing = Tracing()
    agent = bandoneon.Agent(ScriptedModel(f"Billing uses {KEY} for DNI {ID_NUMBER}."), plugins=[Guard(), tracing], context_files=False)
    assert agent.text_redaction is not None
    agent.run_sync(f"Set up billing for DNI {ID_NUMBER}, key {KEY}.")
    gone = weakref.ref(agent)
    del agent
    gc.collect()
    assert gone() is None
    (kept,) = tracing.memory._kept
    assert isinstance(kept, Trace) and kept._spans is None and not isinstance(kept._drafts, list)  # not drafted yet
    text = repr([(span.attributes, span.events) for span in kept])
    assert_clean("trace", text)
    assert "DNI ***" in text and "[openai-key masked]" in text


_AROUND = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=_AROUND, between=_AROUND, after=_AROUND)
def test_the_kept_rules_and_the_live_redaction_agree_on_any_text_and_mask_both_secrets(before, between, after):
    """What a lazy trace is masked with (``agent.text_redaction``, kept without the agent) is
    what every live store gets (``agent.redact``), for any text around the secrets: hostile
    text cannot make one path mask less than the other."""
    agent = _guarded_agent()
    text = f"{before} {KEY} {between} DNI {ID_NUMBER} {after}"
    kept = agent.text_redaction
    assert kept is not None
    masked = kept(text)
    assert masked == agent.redact(text)
    assert_clean("kept rules' output", masked)


@functools.cache
def _guarded_agent() -> bandoneon.Agent:
    """One guarded agent for every generated example (one per example would make the property
    test about agent creation). Built under this module's example pack, like every test here."""
    from bandoneon_guard import Guard

    return bandoneon.Agent(ScriptedModel(), plugins=[Guard()], context_files=False)
