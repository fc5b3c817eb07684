"""Each quirk of llama-cpp-python's server, shown on the raw wire, and the provider handling it.

The first half of every test sends what a by-the-docs client would send (with httpx, no
bandoneon) and shows the server misbehave; the second half shows the core's provider gets a
proper answer. Without the provider's fix, the second half fails exactly like the first.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import bandoneon
from bandoneon import Message, ModelRequest, ToolCall, ToolSpec

WEATHER = ToolSpec(
    "get_weather",
    "Get the current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False},
)
QUESTION = Message.user("What is the weather in Paris?")


@pytest.fixture
def provider(llama_server) -> bandoneon.OpenAICompatible:
    return bandoneon.OpenAICompatible("smollm2", base_url=llama_server.base_url, api_key="")


def post(server, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=120)


def test_tools_are_ignored_unless_tool_choice_is_sent(llama_server, provider):
    request = ModelRequest((QUESTION,), tools=(WEATHER,), settings={"max_tokens": 48, "temperature": 0.0})
    body = provider.request_body(request)
    assert body["tool_choice"] == "auto"
    by_the_docs = {key: value for key, value in body.items() if key != "tool_choice"}  # "auto" is the documented default
    ignored = post(llama_server, by_the_docs).json()["choices"][0]
    assert not ignored["message"].get("tool_calls") and ignored["finish_reason"] != "tool_calls"
    answer = post(llama_server, body).json()["choices"][0]
    assert answer["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


async def test_an_assistant_message_with_null_or_missing_content_is_rejected(llama_server, provider):
    call = ToolCall("call_1", "get_weather", '{"city": "Paris"}')
    history = (QUESTION, Message.assistant("", [call]), Message.tool(call, "Sunny, 21 C"))
    request = ModelRequest(history, settings={"max_tokens": 16})
    body = provider.request_body(request)
    assistant = body["messages"][1]
    assert assistant["content"] == ""
    with_null = json.loads(json.dumps(body))
    with_null["messages"][1]["content"] = None
    refused = post(llama_server, with_null)
    # 422 was measured with other fastapi/pydantic versions; here it is a 500 saying the same.
    assert refused.status_code in (422, 500) and "validation error" in refused.text
    without = json.loads(json.dumps(body))
    del without["messages"][1]["content"]
    broken = post(llama_server, without)
    assert broken.status_code == 500 and "content" in broken.text
    reply = await provider.complete(request)
    assert reply.finish_reason in ("stop", "length")


def test_a_stream_with_tool_choice_auto_is_empty(llama_server, provider):
    request = ModelRequest((QUESTION,), tools=(WEATHER,), settings={"max_tokens": 48, "temperature": 0.0})
    body = {**provider.request_body(request), "stream": True}
    pieces = 0
    with httpx.stream("POST", f"{llama_server.base_url}/chat/completions", json=body, timeout=120) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                delta = json.loads(line[5:])["choices"][0]["delta"]
                pieces += bool(delta.get("content") or delta.get("tool_calls"))
    assert pieces == 0


async def test_after_an_empty_stream_the_provider_asks_again_without_streaming(provider):
    request = ModelRequest((QUESTION,), tools=(WEATHER,), settings={"max_tokens": 48, "temperature": 0.0})

    async def on_delta(kind: str, payload: Any) -> None:
        pass

    for _ in range(3):  # each empty stream leaves a dead keep-alive connection behind
        reply = await provider.complete(request, on_delta=on_delta)
        assert reply.message.tool_calls and reply.message.tool_calls[0].name == "get_weather"


@pytest.fixture
def tuned(llama_server) -> bandoneon.OpenAICompatible:
    """The same server through the ``llama-cpp-python:`` prefix, with the wire options it needs."""
    return bandoneon.resolve_model(f"llama-cpp-python:smollm2@{llama_server.base_url}", api_key="")


async def test_tool_choice_required_is_a_server_error_unless_sent_as_the_named_tool(llama_server, provider, tuned):
    # chatml-function-calling knows only auto, none and a named tool: "required" is an HTTP 500.
    request = ModelRequest((QUESTION,), tools=(WEATHER,), tool_choice="required", settings={"max_tokens": 48, "temperature": 0.0})
    assert post(llama_server, provider.request_body(request)).status_code == 500
    reply = await tuned.complete(request)
    assert reply.message.tool_calls[0].name == "get_weather"


async def test_tool_results_reach_the_model_only_as_user_text(llama_server, provider, tuned):
    # The template renders no `tool` messages: a long result adds nothing to the prompt unless it
    # is sent as user text naming the tool, which the llama-cpp-python: prefix does.
    call = ToolCall("call_1", "get_weather", '{"city": "Paris"}')
    long_result = "Sunny and warm in Paris today. " * 40
    history = (QUESTION, Message.assistant("", (call,)), Message.tool(call, long_result))
    short = ModelRequest(history[:2] + (Message.tool(call, "Sunny."),), tools=(WEATHER,), tool_choice="none", settings={"max_tokens": 4})
    long = ModelRequest(history, tools=(WEATHER,), tool_choice="none", settings={"max_tokens": 4})
    plain = [post(llama_server, provider.request_body(r)).json()["usage"]["prompt_tokens"] for r in (short, long)]
    assert plain[0] == plain[1], "the server dropped the tool message: its length changed nothing"
    fixed = [(await tuned.complete(r)).usage.input_tokens for r in (short, long)]
    assert fixed[1] > fixed[0] + 100
