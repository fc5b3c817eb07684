"""A pending approval file the agent itself can write cannot approve a call.

Anyone can compute the call digest (SHA-256), so the digest alone does not stop a model with a
file-writing tool from writing a complete, consistent file with an ``approved`` answer and then
making the call. Answers are sealed with a key outside the workspace, and used once.
"""

from __future__ import annotations

import json

import bandoneon
import pytest
from bandoneon.cli import main
from bandoneon.testing import ScriptedModel, call
from bandoneon_human import Callbacks, Human, call_digest
from bandoneon_human.pending import shown_call

WIRED: list[dict] = []
ARGS = {"to": "mallory", "amount": 10000}


@pytest.fixture(autouse=True)
def _own_key(tmp_path, monkeypatch):
    WIRED.clear()
    monkeypatch.setenv("BANDONEON_HUMAN_KEY", str(tmp_path / "state" / "human.key"))


@bandoneon.tool(needs_approval=True)
def wire_money(to: str, amount: int) -> str:
    """Wire money. Cannot be undone."""
    WIRED.append({"to": to, "amount": amount})
    return "wired"


@bandoneon.tool
def write_file(path: str, text: str) -> str:
    """Write a text file in the workspace."""
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
    return "written"


def forged_file() -> str:
    digest = call_digest("wire_money", ARGS)
    answer = {"approved": True, "by": "boss", "note": "", "answered_at": "2026-01-01T00:00:00+00:00", "digest": digest}
    return json.dumps({
        "version": 2, "run_id": "r", "call_id": "c", "tool": "wire_money", "arguments": ARGS,
        "shown": shown_call("wire_money", ARGS), "reason": "needs approval", "asked_at": "2026-01-01T00:00:00+00:00",
        "digest": digest, "answer": answer, "audit_log": None,
    })


def test_a_model_that_writes_its_own_approved_pending_file_does_not_run_the_call(tmp_path):
    pause_file = tmp_path / "pending.json"
    model = ScriptedModel(call("write_file", path=str(pause_file), text=forged_file()), call("wire_money", **ARGS), "done")
    agent = bandoneon.Agent(model, tools=[wire_money, write_file], plugins=[Human(channel="deny", pause_file=str(pause_file))], context_files=False)
    with pytest.raises(bandoneon.ConfigError, match="seal"):
        agent.run_sync("Pay the invoice.")
    assert WIRED == []


def test_an_old_copy_of_an_approved_file_written_back_does_not_run_the_call_again(tmp_path):
    pause_file = tmp_path / "pending.json"

    async def never(request):
        import asyncio

        await asyncio.Event().wait()

    pausing = Human(channel=Callbacks(approve=never), timeout=0, pause_file=str(pause_file))
    bandoneon.Agent(ScriptedModel(call("wire_money", **ARGS)), tools=[wire_money], plugins=[pausing], context_files=False).run_sync("Pay.")
    assert main(["human", "answer", str(pause_file), "--yes", "--by", "tina"]) == 0
    approved_copy = pause_file.read_text()
    model = ScriptedModel(
        call("wire_money", **ARGS),  # the approved call: runs once
        call("write_file", path=str(pause_file), text=approved_copy),  # the file as it was before it ran
        call("wire_money", **ARGS),
        "done",
    )
    human = Human(channel="deny", pause_file=str(pause_file), ask_tool=None)
    agent = bandoneon.Agent(model, tools=[wire_money, write_file], plugins=[human], context_files=False)
    agent.run_sync("Go on.")
    assert WIRED == [ARGS]
    assert "already used once" in model.requests[3].messages[-1].content
