"""Pause and resume: a run waiting for a person ends; another process resumes with the answer."""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import textwrap

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_human import AuditLog, Callbacks, Human, answer_pending, read_pending
from bandoneon_human.cli import add_human_command, answer_command, show_command

DROPPED: list[str] = []


@bandoneon.tool(needs_approval=True)
def drop_claw(prize: str) -> str:
    """Drop the claw over a prize. Cannot be undone."""
    DROPPED.append(prize)
    return f"you got the {prize}"


async def _never(request):
    await asyncio.Event().wait()


def paused_run(pause_file, audit=None) -> tuple[bandoneon.RunResult, bandoneon.Agent]:
    DROPPED.clear()
    human = Human(channel=Callbacks(approve=_never), timeout=0, pause_file=str(pause_file), audit_log=audit)
    model = ScriptedModel(call("drop_claw", prize="penguin"))
    agent = bandoneon.Agent(model, tools=[drop_claw], plugins=[human], context_files=False)
    return agent.run_sync("Get me the penguin"), agent


def test_an_unanswered_approval_pauses_the_run_and_records_the_call(tmp_path):
    pause_file = tmp_path / "pending.json"
    result, agent = paused_run(pause_file, audit=str(tmp_path / "a.jsonl"))
    assert result.stop == "paused" and not result.ok and DROPPED == []
    assert "drop_claw" in result.detail and str(pause_file) in result.detail
    pending = read_pending(pause_file)
    assert pending.shown == 'drop_claw({"prize": "penguin"})' and not pending.is_answered
    assert agent.messages[-1].role == "tool"  # the history is valid and can be saved
    assert AuditLog(tmp_path / "a.jsonl").records()[0]["outcome"] == "paused"


# What both resuming processes start with: the claw machine's irreversible tool.
RESUMING_PROCESS = textwrap.dedent(
    """
    import json, sys
    import bandoneon
    from bandoneon.testing import ScriptedModel, call
    from bandoneon_human import Human

    dropped = []

    @bandoneon.tool(needs_approval=True)
    def drop_claw(prize: str) -> str:
        "Drop the claw over a prize."
        dropped.append(prize)
        return f"you got the {prize}"
    """
)

RESUME = RESUMING_PROCESS + textwrap.dedent(
    """

    # "deny": if this process had to ask, the answer would be no. Only the recorded answer can say yes.
    human = Human(channel="deny", pause_file=sys.argv[1], ask_tool=None)
    prompt = human.resume_prompt()
    model = ScriptedModel(call("drop_claw", prize="penguin"), "Here is your penguin!")
    agent = bandoneon.Agent(model, tools=[drop_claw], plugins=[human], context_files=False)
    result = agent.run_sync(prompt)
    print(json.dumps({"prompt": prompt, "stop": result.stop, "text": result.text, "dropped": dropped}))
    """
)


def test_another_process_resumes_with_the_recorded_answer(tmp_path, capsys):
    pause_file = tmp_path / "pending.json"
    paused_run(pause_file)
    assert answer_command(argparse.Namespace(file=str(pause_file), approved=True, by="tina", note="")) == 0
    capsys.readouterr()
    script = tmp_path / "resume.py"
    script.write_text(RESUME)
    done = subprocess.run([sys.executable, str(script), str(pause_file)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["dropped"] == ["penguin"] and outcome["stop"] == "end_turn"
    assert "has approved drop_claw" in outcome["prompt"]
    assert not pause_file.exists() and (tmp_path / "pending.json.done").exists()  # used once


RESUME_WITH_SESSION = RESUMING_PROCESS + textwrap.dedent(
    """
    from bandoneon_sessions import Sessions

    folder, pause_file = sys.argv[1:3]
    human = Human(channel="deny", pause_file=pause_file, ask_tool=None)
    model = ScriptedModel(call("drop_claw", prize="penguin"), "Here is your penguin!")
    sessions = Sessions(session_id="claw", path=folder)
    agent = bandoneon.Agent(model, tools=[drop_claw], plugins=[human, sessions], context_files=False)
    result = agent.run_sync(human.resume_prompt())
    sessions.close()
    seen = [m.content for m in model.requests[0].messages if m.role == "user"]
    print(json.dumps({"stop": result.stop, "dropped": dropped, "user_messages": seen}))
    """
)


def test_a_paused_run_saved_with_sessions_resumes_in_another_process(tmp_path):
    sessions_plugin = pytest.importorskip("bandoneon_sessions", reason="bandoneon-sessions is not installed")
    pause_file, folder = tmp_path / "pending.json", tmp_path / "sessions"
    human = Human(channel=Callbacks(approve=_never), timeout=0, pause_file=str(pause_file), ask_tool=None)
    sessions = sessions_plugin.Sessions(session_id="claw", path=str(folder))
    agent = bandoneon.Agent(ScriptedModel(call("drop_claw", prize="penguin")), tools=[drop_claw], plugins=[human, sessions], context_files=False)
    assert agent.run_sync("Get me the penguin").stop == "paused"
    sessions.close()  # this process is done: nothing of the run stays in memory
    answer_pending(pause_file, True, by="tina")
    script = tmp_path / "resume_with_session.py"
    script.write_text(RESUME_WITH_SESSION)
    done = subprocess.run([sys.executable, str(script), str(folder), str(pause_file)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["stop"] == "end_turn" and outcome["dropped"] == ["penguin"]
    assert outcome["user_messages"][0] == "Get me the penguin"  # the saved history came back
    assert "has approved drop_claw" in outcome["user_messages"][-1]


def test_a_recorded_answer_only_covers_the_same_call(tmp_path):
    pause_file = tmp_path / "pending.json"
    paused_run(pause_file)
    answer_pending(pause_file, True, by="tina")
    model = ScriptedModel(call("drop_claw", prize="bear"), "ok")
    agent = bandoneon.Agent(model, tools=[drop_claw], plugins=[Human(channel="deny", pause_file=str(pause_file))], context_files=False)
    agent.run_sync("resume")
    assert DROPPED == [] and pause_file.exists()


def test_a_recorded_no_is_honoured(tmp_path):
    pause_file = tmp_path / "pending.json"
    paused_run(pause_file)
    answer_pending(pause_file, False, by="tina", note="no more coins")
    human = Human(channel=lambda r: True, pause_file=str(pause_file))
    assert "said no" in human.resume_prompt()
    model = ScriptedModel(call("drop_claw", prize="penguin"), "ok")
    bandoneon.Agent(model, tools=[drop_claw], plugins=[human], context_files=False).run_sync(human.resume_prompt())
    assert DROPPED == [] and "no more coins" in model.requests[1].messages[-1].content


def test_before_an_answer_there_is_no_resume_prompt(tmp_path):
    pause_file = tmp_path / "pending.json"
    paused_run(pause_file)
    assert Human(pause_file=str(pause_file)).resume_prompt() is None


def test_a_broken_pending_file_is_a_clear_error(tmp_path, capsys):
    broken = tmp_path / "pending.json"
    broken.write_text("{not json")
    with pytest.raises(bandoneon.ConfigError, match="not a pending approval"):
        read_pending(broken)
    assert show_command(argparse.Namespace(file=str(broken))) == 2
    assert "not a pending approval" in capsys.readouterr().err


def test_the_cli_shows_and_answers(tmp_path, capsys):
    pause_file = tmp_path / "pending.json"
    paused_run(pause_file)
    parser = argparse.ArgumentParser()
    add_human_command(parser.add_subparsers())
    args = parser.parse_args(["human", "show", str(pause_file)])
    assert args.handler(args) == 0 and '"tool": "drop_claw"' in capsys.readouterr().out
    args = parser.parse_args(["human", "answer", str(pause_file), "--no", "--by", "tina", "--note", "later"])
    assert args.handler(args) == 0
    assert read_pending(pause_file).answer["note"] == "later"
    assert show_command(argparse.Namespace(file=str(tmp_path / "none.json"))) == 1


def test_the_bandoneon_cli_answers_a_paused_approval(tmp_path, capsys):
    from bandoneon.cli import main

    pause_file = tmp_path / "pending.json"
    paused_run(pause_file)
    assert main(["human", "answer", str(pause_file), "--yes", "--by", "tina"]) == 0
    assert "approved: drop_claw" in capsys.readouterr().out
    assert read_pending(pause_file).approved
