"""An approval binds to the exact call, and an approval the audit log cannot record is no approval."""

from __future__ import annotations

import json
import logging

import bandoneon
import pytest
from bandoneon.cli import main
from bandoneon.testing import ScriptedModel, call
from bandoneon_human import AuditLog, Callbacks, Human, PendingTampered, call_digest, read_pending

RAN: list[tuple[str, dict]] = []


@bandoneon.tool(needs_approval=True)
def drop_claw(prize: str) -> str:
    """Drop the claw over a prize. Cannot be undone."""
    RAN.append(("drop_claw", {"prize": prize}))
    return f"you got the {prize}"


@bandoneon.tool(needs_approval=True)
def refund_all() -> str:
    """Refund every customer."""
    RAN.append(("refund_all", {}))
    return "refunded"


async def _never(request):
    import asyncio

    await asyncio.Event().wait()


@pytest.fixture(autouse=True)
def _clean():
    RAN.clear()


def paused(tmp_path, audit: str | None = None):
    pause_file = tmp_path / "pending.json"
    human = Human(channel=Callbacks(approve=_never), timeout=0, pause_file=str(pause_file), audit_log=audit)
    model = ScriptedModel(call("drop_claw", prize="penguin"))
    bandoneon.Agent(model, tools=[drop_claw, refund_all], plugins=[human], context_files=False).run_sync("Get me the penguin")
    return pause_file


def resume(pause_file, *replies):
    human = Human(channel="deny", pause_file=str(pause_file), ask_tool=None)
    model = ScriptedModel(*replies)
    agent = bandoneon.Agent(model, tools=[drop_claw, refund_all], plugins=[human], context_files=False)
    return human, agent


def edit(pause_file, change):
    data = json.loads(pause_file.read_text())
    change(data)
    pause_file.write_text(json.dumps(data))


def test_the_pending_file_carries_the_digest_of_the_exact_call(tmp_path):
    pending = read_pending(paused(tmp_path))
    assert pending.digest == call_digest("drop_claw", {"prize": "penguin"})
    assert pending.digest != call_digest("drop_claw", {"prize": "whole machine"})


@pytest.mark.parametrize(
    "tamper",
    [
        lambda d: d.update(tool="refund_all", arguments={}),
        lambda d: d["arguments"].update(prize="the whole machine"),
        lambda d: d.update(shown='drop_claw({"prize": "teddy"})'),
    ],
    ids=["tool", "arguments", "shown"],
)
def test_a_pending_file_changed_after_it_was_written_is_refused_and_nothing_runs(tmp_path, tamper, capsys):
    pause_file = paused(tmp_path)
    assert main(["human", "answer", str(pause_file), "--yes", "--by", "tina"]) == 0
    edit(pause_file, tamper)
    with pytest.raises(PendingTampered, match="refused.*changed after it was written.*nothing runs"):
        read_pending(pause_file)
    human, agent = resume(pause_file, call("refund_all"), call("drop_claw", prize="the whole machine"), "ok")
    with pytest.raises(PendingTampered):
        human.resume_prompt()
    with pytest.raises(bandoneon.ConfigError, match="changed after it was written"):
        agent.run_sync("Go on.")
    assert RAN == []
    capsys.readouterr()
    assert main(["human", "show", str(pause_file)]) == 2
    assert "changed after it was written" in capsys.readouterr().err


def test_a_recomputed_digest_still_does_not_match_the_answer(tmp_path):
    pause_file = paused(tmp_path)
    assert main(["human", "answer", str(pause_file), "--yes"]) == 0
    forged = {"prize": "the whole machine"}
    edit(pause_file, lambda d: d.update(arguments=forged, digest=call_digest("drop_claw", forged), shown=f'drop_claw({json.dumps(forged)})'))
    with pytest.raises(PendingTampered, match="answer was given for another call"):
        read_pending(pause_file)


def test_the_answering_cli_writes_the_audit_record(tmp_path):
    audit = tmp_path / "audit.jsonl"
    pause_file = paused(tmp_path, audit=str(audit))
    assert main(["human", "answer", str(pause_file), "--yes", "--by", "tina", "--note", "one go"]) == 0
    record = AuditLog(audit).records()[-1]
    assert record["outcome"] == "answered_later" and record["approved"] is True and record["by"] == "tina"
    assert record["shown"] == 'drop_claw({"prize": "penguin"})' and record["digest"] == call_digest("drop_claw", {"prize": "penguin"})


def test_when_the_cli_cannot_write_the_audit_log_the_answer_is_not_recorded(tmp_path, capsys):
    audit = tmp_path / "audit.jsonl"
    pause_file = paused(tmp_path, audit=str(audit))
    audit.unlink()
    audit.mkdir()  # a folder where the log should be: not writable as a file, even for root
    assert main(["human", "answer", str(pause_file), "--yes", "--by", "tina"]) == 2
    error = capsys.readouterr().err
    assert "the answer was not recorded" in error and "cannot be written" in error
    assert not read_pending(pause_file).is_answered


def test_an_approval_the_audit_log_cannot_record_is_refused_visibly(tmp_path, caplog):
    audit = tmp_path / "audit.jsonl"
    audit.mkdir()
    answered = []
    human = Human(channel=lambda request: True, audit_log=str(audit))
    model = ScriptedModel(call("drop_claw", prize="penguin"), "I could not.")
    agent = bandoneon.Agent(model, tools=[drop_claw], plugins=[human], context_files=False)
    agent.on("approval_answered", answered.append)
    with caplog.at_level(logging.ERROR, logger="bandoneon"):
        agent.run_sync("Get me the penguin")
    assert RAN == []
    refusal = model.requests[1].messages[-1]
    assert refusal.is_error and "could not be written to the audit log" in refusal.content and "did not run" in refusal.content
    assert answered[0].outcome == "unrecorded"
    assert "audit log" in caplog.text
