"""Rule files: every mistake is a ConfigError naming the file and the rule, caught at build time."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_guard import Guard, Policy, Rule, load_policy, merge_policies
from bandoneon_guard.cli import show_policy

GOOD = """
[[rule]]
name = "ravens-to-allies"
tool = "send_raven"
argument = "to"
one_of = ["riverhold", "highcliff"]
message = "Ravens only fly to allies"

[[redact]]
name = "keys"
pattern = 'sk-[A-Za-z0-9]+'
replacement = "sk-***"

[untrusted]
tools = ["read_*"]

[trifecta]
mode = "refuse"
"""


def write(tmp_path: Path, text: str, name: str = "rules.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_good_file_loads_every_part(tmp_path):
    policy = load_policy(write(tmp_path, GOOD))
    assert [r.name for r in policy.rules] == ["ravens-to-allies"]
    assert policy.redactions[0].apply("key sk-abc123") == "key sk-***"
    assert policy.untrusted_tools[0][0] == "read_*"
    assert policy.trifecta == "refuse"


def test_an_unknown_key_in_a_rule_names_the_file_the_rule_and_the_key(tmp_path):
    path = write(tmp_path, '[[rule]]\nname = "allies"\ntool = "send_raven"\nargument = "to"\none_off = ["x"]\n')
    with pytest.raises(bandoneon.ConfigError) as caught:
        Guard(rule_files=[str(path)])
    message = str(caught.value)
    assert str(path) in message and "'allies'" in message and "'one_off'" in message


def test_a_bad_regex_names_the_file_and_the_rule(tmp_path):
    path = write(tmp_path, '[[rule]]\nname = "ids"\ntool = "t"\nargument = "a"\nmatches = "[0-9"\n')
    with pytest.raises(bandoneon.ConfigError, match=rf"{path}: rule 'ids': 'matches' is not a valid regular expression"):
        Guard(rule_files=[str(path)])


def test_a_bad_redaction_regex_names_the_file_and_the_redaction(tmp_path):
    path = write(tmp_path, '[[redact]]\nname = "dni"\npattern = "(DNI"\n')
    with pytest.raises(bandoneon.ConfigError, match=rf"{path}: redaction 'dni': 'pattern' is not a valid"):
        load_policy(path)


def test_an_unknown_top_level_key_is_an_error(tmp_path):
    path = write(tmp_path, '[[rules]]\nname = "x"\n')
    with pytest.raises(bandoneon.ConfigError, match=rf"{path}: unknown key 'rules'"):
        load_policy(path)


def test_a_rule_without_a_name_is_named_by_its_position(tmp_path):
    path = write(tmp_path, '[[rule]]\nname = "a"\ntool = "a"\n\n[[rule]]\ntool = "b"\nbogus = 1\n')
    with pytest.raises(bandoneon.ConfigError, match=r"rule '#2': unknown key 'bogus'"):
        load_policy(path)
    path = write(tmp_path, '[[rule]]\ntool = "a"\n')
    with pytest.raises(bandoneon.ConfigError, match=r"rule '#1': every rule needs a 'name'"):
        load_policy(path)


def test_two_rules_with_one_name_are_an_error(tmp_path):
    path = write(tmp_path, '[[rule]]\nname = "x"\ntool = "a"\n\n[[rule]]\nname = "x"\ntool = "b"\n')
    with pytest.raises(bandoneon.ConfigError, match="rule 'x': two rules have this name"):
        load_policy(path)


def test_broken_toml_and_a_missing_file_are_config_errors(tmp_path):
    with pytest.raises(bandoneon.ConfigError, match="not valid TOML"):
        load_policy(write(tmp_path, "[[rule]\n"))
    with pytest.raises(bandoneon.ConfigError, match="cannot be read"):
        load_policy(tmp_path / "missing.toml")


def test_a_bad_file_fails_when_the_agent_is_built_and_an_existing_agent_keeps_working(tmp_path):
    model = ScriptedModel("first answer", "second answer")
    agent = bandoneon.Agent(model, plugins=[], context_files=False)
    agent.run_sync("hello")
    path = write(tmp_path, '[[rule]]\nname = "ids"\ntool = "t"\nargument = "a"\nmatches = "[0-9"\n')
    with pytest.raises(bandoneon.ConfigError):
        bandoneon.Agent(model, plugins={"guard": {"rule_files": [str(path)]}}, context_files=False)
    assert agent.run_sync("again").text == "second answer"
    assert len(agent.messages) == 4


# ---------------------------------------------------------------- merging: stricter wins


def policy(text: str, source: str) -> Policy:
    from bandoneon_guard import policy_from_text

    return policy_from_text(text, source=source)


@pytest.mark.pack_free  # the example pack adds its own book_ticket rule to the merge this test compares
def test_two_sources_that_disagree_resolve_to_the_stricter_rule():
    lenient = policy('[[rule]]\nname = "ask"\ntool = "book_ticket"\nargument = "seat_class"\none_of = ["tourist"]\naction = "approve"\n[trifecta]\nmode = "warn"\n', "pack-a")
    strict = policy('[[rule]]\nname = "never"\ntool = "book_ticket"\nargument = "seat_class"\none_of = ["tourist"]\n[trifecta]\nmode = "refuse"\n', "pack-b")
    merged = merge_policies([lenient, strict])
    assert merged.trifecta == "refuse" and merged.trifecta_source == "pack-b"

    @bandoneon.tool
    def book_ticket(train: int, seat_class: str) -> str:
        """Book a seat."""
        return "booked"

    model = ScriptedModel(call("book_ticket", train=1, seat_class="first"), "ok")
    agent = bandoneon.Agent(model, tools=[book_ticket], plugins=[Guard(rules=list(merged.rules))], context_files=False)
    agent.run_sync("book")
    seen = model.requests[1].messages[-1].content
    assert seen.startswith("Blocked by policy (never") and "booked" not in seen
    conflict = merged.as_document()["conflict"][0]
    assert conflict["tool"] == "book_ticket" and "deny wins" in conflict["resolution"]


@pytest.mark.parametrize(("castle", "allowed"), [("highcliff", True), ("riverhold", False), ("darkwood", False)])
def test_two_allowlists_on_one_argument_allow_only_what_both_allow(castle, allowed):
    a = Rule(name="a", tool="send_raven", argument="to", one_of=["riverhold", "highcliff"], source="pack-a")
    b = Rule(name="b", tool="send_raven", argument="to", one_of=["highcliff", "darkwood"], source="pack-b")
    merged = merge_policies([Policy(rules=(a,)), Policy(rules=(b,))])

    @bandoneon.tool
    def send_raven(to: str) -> str:
        """Send a raven."""
        return "sent"

    model = ScriptedModel(call("send_raven", to=castle), "ok")
    bandoneon.Agent(model, tools=[send_raven], plugins=[Guard(rules=list(merged.rules))], context_files=False).run_sync("go")
    assert (model.requests[1].messages[-1].content == "sent") is allowed


def test_policy_show_prints_the_merged_policy_as_toml_with_sources(tmp_path, capsys):
    first = write(tmp_path, GOOD, "first.toml")
    second = write(tmp_path, '[[rule]]\nname = "quiet-ravens"\ntool = "send_raven"\nargument = "to"\none_of = ["highcliff"]\n', "second.toml")
    assert show_policy(argparse.Namespace(file=[str(first), str(second)])) == 0
    out = capsys.readouterr().out
    document = tomllib.loads(out)
    assert {r["source"] for r in document["rule"]} >= {str(first), str(second)}
    assert document["trifecta"] == {"mode": "refuse", "source": str(first)}
    assert document["conflict"][0]["tool"] == "send_raven"


def test_policy_show_names_the_broken_file_and_exits_2(tmp_path, capsys):
    broken = write(tmp_path, '[[rule]]\nname = "x"\ntool = "t"\nwhat = 1\n')
    assert show_policy(argparse.Namespace(file=[str(broken)])) == 2
    assert f"{broken}: rule 'x': unknown key 'what'" in capsys.readouterr().err


def test_the_policy_command_registers_with_argparse():
    parser = argparse.ArgumentParser()
    Guard.register_commands(parser.add_subparsers())
    args = parser.parse_args(["policy", "show", "--file", "x.toml"])
    assert args.handler is show_policy and args.file == ["x.toml"]
