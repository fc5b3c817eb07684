"""Images and files in a prompt: carried by the message, encoded on the wire, refused before the
request by a model that cannot read them, saved by sessions, counted by compaction, traced as
digests."""

from __future__ import annotations

import base64
import json

import bandoneon
import pytest
from bandoneon import ConfigError, FilePart, ImagePart, TextPart
from bandoneon.testing import MockLLMServer, Reply, ScriptedModel

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


@pytest.fixture
def photo(tmp_path):
    path = tmp_path / "receipt.png"
    path.write_bytes(PNG)
    return path


def agent_on(server: MockLLMServer, prefix: str = "openai-compatible", **kwargs) -> bandoneon.Agent:
    kwargs.setdefault("plugins", [])
    return bandoneon.Agent(f"{prefix}:m@{server.base_url}", context_files=False, **kwargs)


def test_a_prompt_with_an_image_and_a_file_reaches_the_server_in_order(mock_llm, photo):
    mock_llm.add(Reply(text="A receipt for 12 euros."))
    agent = agent_on(mock_llm)
    pdf = FilePart.from_bytes(b"%PDF-1.4 tiny", "application/pdf", "terms.pdf")
    result = agent.run_sync(["What is on this receipt?", ImagePart.from_path(photo), "And these terms?", pdf])
    assert result.text == "A receipt for 12 euros."
    content = mock_llm.requests[0].json["messages"][-1]["content"]
    assert [c["type"] for c in content] == ["text", "image_url", "text", "file"]
    assert content[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert content[3]["file"] == {"filename": "terms.pdf", "file_data": "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.4 tiny").decode()}
    first = agent.messages[0]
    assert first.content == "What is on this receipt?\nAnd these terms?"
    assert [p.kind for p in first.parts] == ["text", "image", "text", "file"]


def test_an_image_by_url_is_fetched_by_the_server_not_by_us(mock_llm):
    mock_llm.add(Reply(text="A cat."))
    agent_on(mock_llm).run_sync(["What is this?", ImagePart.from_url("https://images.example/cat.jpg")])
    content = mock_llm.requests[0].json["messages"][-1]["content"]
    assert content[1] == {"type": "image_url", "image_url": {"url": "https://images.example/cat.jpg"}}


def test_a_model_that_cannot_read_images_says_so_before_the_request(mock_llm, photo):
    agent = agent_on(mock_llm, prefix="llama-cpp-python")
    with pytest.raises(ConfigError, match=r"cannot take images \(it takes text only\)"):
        agent.run_sync(["What is this?", ImagePart.from_path(photo)])
    assert mock_llm.requests == [] and agent.messages == []
    files = agent_on(mock_llm, prefix="llamacpp")
    with pytest.raises(ConfigError, match=r"cannot take files \(it takes image\)"):
        files.run_sync(["Read this", FilePart.from_bytes(b"hi", "text/plain")])
    assert mock_llm.requests == []


def test_a_fallback_that_cannot_read_images_is_named_before_the_request(mock_llm, photo):
    agent = bandoneon.Agent(
        [f"openai-compatible:vision@{mock_llm.base_url}", f"llama-cpp-python:text@{mock_llm.base_url}"], plugins=[], context_files=False
    )
    with pytest.raises(ConfigError, match=r"the fallback model llama-cpp-python:text cannot take images"):
        agent.run_sync(["What is this?", ImagePart.from_path(photo)])
    assert mock_llm.requests == [] and agent.messages == []


def test_bad_parts_are_clear_errors(tmp_path, photo):
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(ConfigError, match="not an image bandoneon can send"):
        ImagePart.from_path(tmp_path / "notes.txt")
    with pytest.raises(ConfigError, match="cannot read"):
        ImagePart.from_path(tmp_path / "missing.png")
    with pytest.raises(ConfigError, match="either data"):
        ImagePart("image/png")
    with pytest.raises(ConfigError, match="must start with https://"):
        ImagePart.from_url("file:///etc/passwd")
    agent = bandoneon.Agent(ScriptedModel(), plugins=[], context_files=False)
    with pytest.raises(ConfigError, match="a prompt is a string or a list"):
        agent.run_sync(["look", 42])
    assert agent.messages == []


def test_a_list_of_strings_is_a_plain_text_prompt():
    model = ScriptedModel("ok")
    agent = bandoneon.Agent(model, plugins=[], context_files=False)
    agent.run_sync(["one", TextPart("two")])
    assert (agent.messages[0].content, agent.messages[0].parts) == ("one\ntwo", ())


def test_a_session_keeps_the_image_and_sends_it_again_after_a_restart(tmp_path, photo):
    sessions = pytest.importorskip("bandoneon_sessions")
    first = bandoneon.Agent(ScriptedModel("A receipt."), plugins=[sessions.Sessions(session_id="s1", path=str(tmp_path))], context_files=False)
    first.run_sync(["What is this?", ImagePart.from_path(photo)])
    first.close()
    model = ScriptedModel("12 euros.")
    second = bandoneon.Agent(model, plugins=[sessions.Sessions(session_id="s1", path=str(tmp_path))], context_files=False)
    second.run_sync("How much?")
    sent = model.requests[0].messages[0]
    assert sent.parts[1] == ImagePart("image/png", data=PNG)
    saved = "".join(p.read_text() for p in tmp_path.rglob("*.jsonl"))
    assert base64.b64encode(PNG).decode() in saved


def test_compaction_counts_an_image_by_its_share_of_the_window(photo):
    tokens = pytest.importorskip("bandoneon_compaction._tokens")
    text_only = bandoneon.Message.user("What is this?")
    with_image = bandoneon.Message.user("What is this?", [TextPart("What is this?"), ImagePart.from_path(photo)])
    count = tokens.estimate_tokens
    assert tokens.message_tokens(with_image, count) - tokens.message_tokens(text_only, count) == tokens.IMAGE_TOKENS


def test_a_trace_keeps_a_digest_of_the_image_never_its_bytes(tmp_path, photo):
    tracing = pytest.importorskip("bandoneon_tracing")
    path = tmp_path / "trace.jsonl"
    agent = bandoneon.Agent(ScriptedModel("A receipt."), plugins=[tracing.Tracing(jsonl=str(path))], context_files=False)
    image = ImagePart.from_path(photo)
    agent.run_sync(["What is this?", image])
    agent.close()
    exported = path.read_text()
    assert image.digest in exported and "image/png" in exported
    assert base64.b64encode(PNG).decode() not in exported
    run_span = next(json.loads(line) for line in exported.splitlines() if '"invoke_agent' in line)
    assert run_span["attributes"]["bandoneon.prompt.parts"] == [f"image image/png {len(PNG)} bytes {image.digest}"]
