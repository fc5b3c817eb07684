"""The loopback mock LLM server, driven over real HTTP with httpx."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from bandoneon.testing.server import Fault, MockLLMServer, RecordedRequest, Reply

CHAT = "/chat/completions"
MESSAGES = "/messages"
EMBEDDINGS = "/embeddings"
USER_TURN = {"messages": [{"role": "user", "content": "hi"}]}
# Plain http: skip loading the CA bundle, which costs ~50 ms per client.
NO_TLS = {"verify": False}


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as running:
        yield running


@pytest.fixture
def client(server: MockLLMServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=5, **NO_TLS) as http_client:
        yield http_client


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """(event name or None, data) for each server-sent event in ``text``."""
    events = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields.get("event"), fields["data"]))
    return events


def openai_chunks(text: str) -> list[dict[str, Any]]:
    data = [data for _, data in sse_events(text)]
    assert data[-1] == "[DONE]"
    return [json.loads(item) for item in data[:-1]]


def anthropic_events(text: str) -> list[dict[str, Any]]:
    events = []
    for name, data in sse_events(text):
        payload = json.loads(data)
        assert payload["type"] == name
        events.append(payload)
    return events


def cosine(left: list[float], right: list[float]) -> float:
    return sum(a * b for a, b in zip(left, right, strict=True))


# -- OpenAI chat completions ------------------------------------------------------------------


def test_text_reply_is_an_openai_chat_completion(server, client):
    server.add(Reply(text="hello"))

    body = client.post(CHAT, json={"model": "gpt-x", **USER_TURN}).json()

    assert body["object"] == "chat.completion"
    assert body["model"] == "gpt-x"
    assert body["choices"] == [
        {"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}
    ]


def test_tool_call_with_dict_args_sends_json_arguments(server, client):
    server.add(Reply(tool_calls=[("get_forecast", {"city": "Paris"})]))

    choice = client.post(CHAT, json=USER_TURN).json()["choices"][0]

    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    assert choice["message"]["tool_calls"] == [{
        "id": "call_1", "type": "function",
        "function": {"name": "get_forecast", "arguments": '{"city": "Paris"}'},
    }]


def test_tool_call_with_str_args_sends_them_verbatim(server, client):
    server.add(Reply(tool_calls=[("call_x", "get_forecast", '{"city": ')]))

    call = client.post(CHAT, json=USER_TURN).json()["choices"][0]["message"]["tool_calls"][0]

    assert call["id"] == "call_x"
    assert call["function"]["arguments"] == '{"city": '


def test_tool_call_ids_are_unique_across_replies(server, client):
    server.add(Reply(tool_calls=[("a", {}), ("b", {})]), Reply(tool_calls=[("c", {})]))

    ids = [
        call["id"]
        for _ in range(2)
        for call in client.post(CHAT, json=USER_TURN).json()["choices"][0]["message"]["tool_calls"]
    ]

    assert ids == ["call_1", "call_2", "call_3"]


def test_explicit_finish_reason_is_sent_as_is(server, client):
    server.add(Reply(tool_calls=[("f", {})], finish_reason="stop"))

    assert client.post(CHAT, json=USER_TURN).json()["choices"][0]["finish_reason"] == "stop"


def test_usage_and_cached_tokens_are_reported(server, client):
    server.add(Reply(text="x", finish_reason="length", usage=(10, 5), cached_tokens=3))

    body = client.post(CHAT, json=USER_TURN).json()

    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"] == {
        "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 3},
    }


def test_default_usage_is_a_rough_count_of_messages_and_text(server, client):
    server.add(Reply(text="a" * 40))

    usage = client.post(CHAT, json=USER_TURN).json()["usage"]

    assert usage["prompt_tokens"] == len(json.dumps(USER_TURN["messages"])) // 4
    assert usage["completion_tokens"] == 11


def test_stream_deltas_reassemble_text_and_tool_calls(server, client):
    server.add(Reply(
        text="the weather in Paris",
        tool_calls=[("get_forecast", {"city": "Paris", "days": 3}), ("log", '{"broken": ')],
    ))

    chunks = openai_chunks(client.post(CHAT, json={**USER_TURN, "stream": True}).text)

    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks]
    assert deltas[0] == {"role": "assistant"}
    text_pieces = [delta["content"] for delta in deltas if "content" in delta]
    assert len(text_pieces) > 1
    assert "".join(text_pieces) == "the weather in Paris"
    calls: dict[int, dict[str, str]] = {}
    for delta in deltas:
        for piece in delta.get("tool_calls", []):
            call = calls.setdefault(piece["index"], {"arguments": ""})
            call.update({key: piece[key] for key in ("id", "type") if key in piece})
            call["name"] = piece["function"].get("name", call.get("name"))
            call["arguments"] += piece["function"]["arguments"]
    assert calls == {
        0: {"id": "call_1", "type": "function", "name": "get_forecast",
            "arguments": '{"city": "Paris", "days": 3}'},
        1: {"id": "call_2", "type": "function", "name": "log", "arguments": '{"broken": '},
    }
    assert [chunk["choices"][0]["finish_reason"] for chunk in chunks][-1] == "tool_calls"


def test_stream_tool_arguments_arrive_in_several_pieces(server, client):
    server.add(Reply(tool_calls=[("get_forecast", {"city": "Paris"})]))

    chunks = openai_chunks(client.post(CHAT, json={**USER_TURN, "stream": True}).text)

    pieces = [
        piece["function"]["arguments"]
        for chunk in chunks
        for piece in chunk["choices"][0]["delta"].get("tool_calls", [])
        if "id" not in piece
    ]
    assert len(pieces) in (2, 3)


def test_stream_include_usage_ends_with_a_usage_chunk(server, client):
    server.add(Reply(text="hi", usage=(7, 2)))
    request = {**USER_TURN, "stream": True, "stream_options": {"include_usage": True}}

    chunks = openai_chunks(client.post(CHAT, json=request).text)

    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["total_tokens"] == 9
    assert "usage" not in chunks[-2]


def test_stream_without_include_usage_has_no_usage_chunk(server, client):
    server.add(Reply(text="hi"))

    chunks = openai_chunks(client.post(CHAT, json={**USER_TURN, "stream": True}).text)

    assert all(chunk["choices"] for chunk in chunks)


# -- faults -----------------------------------------------------------------------------------


def test_fault_sends_status_headers_and_body(server, client):
    body = '{"error": {"message": "overloaded"}}'
    server.add(Fault(status=503, headers={"Retry-After": "2"}, body=body))

    response = client.post(CHAT, json=USER_TURN)

    assert response.status_code == 503
    assert response.headers["retry-after"] == "2"
    assert response.text == body


def test_fault_without_body_sends_an_openai_error(server, client):
    server.add(Fault(status=429))

    response = client.post(CHAT, json=USER_TURN)

    assert response.status_code == 429
    assert response.json()["error"]["type"] == "rate_limit_exceeded"


def test_fault_can_send_a_body_that_is_not_json(server, client):
    server.add(Fault(status=200, body="this is not json"))

    response = client.post(CHAT, json=USER_TURN)

    assert response.status_code == 200
    assert response.text == "this is not json"
    with pytest.raises(json.JSONDecodeError):
        response.json()


def test_drop_fault_closes_the_connection_without_a_response(server, client):
    server.add(Fault(drop=True))

    with pytest.raises(httpx.RemoteProtocolError):
        client.post(CHAT, json=USER_TURN)
    assert len(server.requests) == 1


def test_delay_only_fault_pauses_then_the_next_item_answers(server, client):
    server.add(Fault(delay=0.2), Reply(text="late"))

    started = time.monotonic()
    response = client.post(CHAT, json=USER_TURN)

    assert time.monotonic() - started >= 0.2
    assert response.json()["choices"][0]["message"]["content"] == "late"
    server.assert_all_used()


def test_fault_with_a_status_and_a_delay_is_an_error_after_the_delay(server, client):
    server.add(Fault(status=500, delay=0.1), Reply(text="unused"))

    started = time.monotonic()
    response = client.post(CHAT, json=USER_TURN)

    assert time.monotonic() - started >= 0.1
    assert response.status_code == 500


def test_reply_delay_holds_the_answer(server, client):
    server.add(Reply(text="x", delay=0.2))

    started = time.monotonic()
    client.post(CHAT, json=USER_TURN)

    assert time.monotonic() - started >= 0.2


def test_cut_stream_after_leaves_the_client_an_incomplete_stream(server, client):
    server.add(Reply(text="hello big wide world", cut_stream_after=2))

    lines = []
    with pytest.raises(httpx.RemoteProtocolError):
        with client.stream("POST", CHAT, json={**USER_TURN, "stream": True}) as response:
            lines.extend(line for line in response.iter_lines() if line)

    assert len(lines) == 2
    assert "[DONE]" not in "".join(lines)


def test_stream_error_in_an_openai_stream_is_an_error_data_line(server, client):
    server.add(Fault(stream_error="server_error"))

    response = client.post(CHAT, json={**USER_TURN, "stream": True})

    assert response.status_code == 200
    data = [json.loads(data) for _, data in sse_events(response.text)]
    assert data[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert data[-1]["error"]["type"] == "server_error"


def test_stream_error_on_a_request_that_does_not_stream_is_an_http_error(server, client):
    server.add(Fault(stream_error="overloaded_error"))

    response = client.post(MESSAGES, json=USER_TURN)

    assert response.status_code == 500
    assert response.json()["error"]["type"] == "overloaded_error"


# -- responder, queue and history -------------------------------------------------------------


def test_respond_with_sync_function_answers_when_the_queue_is_empty(server, client):
    server.respond_with(lambda request: Reply(text=request.json["messages"][0]["content"]))

    body = client.post(CHAT, json=USER_TURN).json()

    assert body["choices"][0]["message"]["content"] == "hi"


def test_respond_with_async_function_answers_when_the_queue_is_empty(server, client):
    async def respond(request: RecordedRequest) -> Fault:
        await asyncio.sleep(0)
        return Fault(status=418)

    server.respond_with(respond)

    assert client.post(CHAT, json=USER_TURN).status_code == 418


def test_queued_items_answer_before_respond_with(server, client):
    server.respond_with(lambda request: Reply(text="fallback"))
    server.add(Reply(text="queued"))

    contents = [
        client.post(CHAT, json=USER_TURN).json()["choices"][0]["message"]["content"]
        for _ in range(2)
    ]

    assert contents == ["queued", "fallback"]


def test_respond_with_failure_is_a_500_naming_the_error(server, client):
    server.respond_with(lambda request: 1 / 0)

    response = client.post(CHAT, json=USER_TURN)

    assert response.status_code == 500
    assert "ZeroDivisionError" in response.json()["error"]["message"]


def test_empty_queue_answers_500_saying_why(server, client):
    response = client.post(CHAT, json=USER_TURN)

    assert response.status_code == 500
    assert response.json()["error"]["message"] == (
        "MockLLMServer: no reply queued for POST /v1/chat/completions"
    )
    assert len(server.requests) == 1


def test_requests_are_recorded_in_arrival_order(server, client):
    server.add(Reply(text="a"), Fault(status=503))

    client.post(CHAT, json=USER_TURN, headers={"X-Trace": "one"})
    client.post(MESSAGES, json={"messages": []})

    first, second = server.requests
    assert (first.method, first.path, first.json) == ("POST", "/v1/chat/completions", USER_TURN)
    assert first.headers["x-trace"] == "one"
    assert json.loads(first.body) == USER_TURN
    assert second.path == "/v1/messages"


def test_body_that_is_not_json_is_rejected_and_recorded(server, client):
    server.add(Reply(text="unused"))

    response = client.post(CHAT, content=b"{not json", headers={"content-type": "application/json"})

    assert response.status_code == 400
    assert server.requests[0].json is None
    assert server.requests[0].body == b"{not json"
    with pytest.raises(AssertionError):
        server.assert_all_used()


def test_assert_all_used_lists_the_unused_items(server, client):
    server.add(Reply(text="used"), Reply(text="never sent"))
    client.post(CHAT, json=USER_TURN)

    with pytest.raises(AssertionError, match="(?s)1 queued item.*never sent"):
        server.assert_all_used()


def test_reset_clears_queue_history_and_responder(server, client):
    server.add(Reply(text="a"))
    server.respond_with(lambda request: Reply(text="b"))
    client.post(CHAT, json=USER_TURN)
    server.add(Reply(text="c"))

    server.reset()

    assert server.requests == []
    server.assert_all_used()
    assert client.post(CHAT, json=USER_TURN).status_code == 500


def test_invalid_tool_call_is_refused_when_the_reply_is_built():
    with pytest.raises(ValueError, match="tool call"):
        Reply(tool_calls=[("only-a-name",)])


def test_add_refuses_anything_but_replies_and_faults(server):
    with pytest.raises(TypeError, match="Reply or Fault"):
        server.add("hello")


# -- Anthropic Messages -----------------------------------------------------------------------


def test_anthropic_message_carries_thinking_text_and_tool_use(server, client):
    server.add(Reply(
        thinking=[("I think...", "sig-abc")],
        text="answer",
        tool_calls=[("get_forecast", {"city": "Paris"}), ("log", '{"broken": ')],
        usage=(12, 4),
        cached_tokens=5,
    ))

    body = client.post(MESSAGES, json={"model": "claude-x", **USER_TURN}).json()

    assert (body["type"], body["role"], body["model"]) == ("message", "assistant", "claude-x")
    assert body["content"] == [
        {"type": "thinking", "thinking": "I think...", "signature": "sig-abc"},
        {"type": "text", "text": "answer"},
        {"type": "tool_use", "id": "toolu_1", "name": "get_forecast", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_2", "name": "log", "input": '{"broken": '},
    ]
    assert (body["stop_reason"], body["stop_sequence"]) == ("tool_use", None)
    assert body["usage"] == {
        "input_tokens": 12, "output_tokens": 4,
        "cache_read_input_tokens": 5, "cache_creation_input_tokens": 0,
    }


def test_anthropic_text_reply_ends_the_turn(server, client):
    server.add(Reply(text="done"))

    assert client.post(MESSAGES, json=USER_TURN).json()["stop_reason"] == "end_turn"


def test_anthropic_stream_reassembles_thinking_text_and_tool_input(server, client):
    server.add(Reply(
        thinking=[("I think about the weather", "sig-abc")],
        text="It is sunny in Paris",
        tool_calls=[("get_forecast", {"city": "Paris"})],
        usage=(12, 4),
    ))

    events = anthropic_events(client.post(MESSAGES, json={**USER_TURN, "stream": True}).text)

    assert events[0]["message"]["content"] == []
    assert events[0]["message"]["usage"]["input_tokens"] == 12
    blocks: dict[int, dict[str, Any]] = {}
    for event in events:
        if event["type"] == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"], partial_json="")
        elif event["type"] == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            field = {"text_delta": "text", "thinking_delta": "thinking",
                     "signature_delta": "signature", "input_json_delta": "partial_json"}
            key = field[delta["type"]]
            block[key] += delta[key]
    assert blocks[0] == {"type": "thinking", "thinking": "I think about the weather",
                         "signature": "sig-abc", "partial_json": ""}
    assert blocks[1]["text"] == "It is sunny in Paris"
    assert blocks[2]["id"] == "toolu_1"
    assert json.loads(blocks[2]["partial_json"]) == {"city": "Paris"}
    assert [event["type"] for event in events[-2:]] == ["message_delta", "message_stop"]
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert events[-2]["usage"]["output_tokens"] == 4


def test_anthropic_stream_sends_the_real_event_sequence(server, client):
    server.add(Reply(text="hi there"))

    events = anthropic_events(client.post(MESSAGES, json={**USER_TURN, "stream": True}).text)

    assert [event["type"] for event in events] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_delta",
        "content_block_stop", "message_delta", "message_stop",
    ]


def test_anthropic_529_fault_has_the_overloaded_error_shape(server, client):
    server.add(Fault(status=529))

    response = client.post(MESSAGES, json=USER_TURN)

    assert response.status_code == 529
    body = response.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == "overloaded_error"
    assert body["error"]["message"]


@pytest.mark.parametrize(
    ("status", "error_type"),
    [(429, "rate_limit_error"), (401, "authentication_error"), (500, "api_error")],
)
def test_anthropic_fault_error_type_follows_the_status(server, client, status, error_type):
    server.add(Fault(status=status))

    assert client.post(MESSAGES, json=USER_TURN).json()["error"]["type"] == error_type


def test_anthropic_stream_error_event_follows_message_start(server, client):
    server.add(Fault(stream_error="overloaded_error"))

    response = client.post(MESSAGES, json={**USER_TURN, "stream": True})

    events = anthropic_events(response.text)
    assert [event["type"] for event in events] == ["message_start", "error"]
    assert events[1]["error"]["type"] == "overloaded_error"


# -- embeddings -------------------------------------------------------------------------------


def test_embeddings_answer_one_unit_vector_per_input(server, client):
    body = client.post(EMBEDDINGS, json={"model": "emb", "input": ["a cat", "a dog"]}).json()

    assert (body["object"], body["model"]) == ("list", "emb")
    assert [item["index"] for item in body["data"]] == [0, 1]
    for item in body["data"]:
        assert item["object"] == "embedding"
        assert len(item["embedding"]) == 64
        assert math.isclose(cosine(item["embedding"], item["embedding"]), 1.0)
    assert body["usage"]["prompt_tokens"] == body["usage"]["total_tokens"] > 0


def test_embeddings_of_texts_sharing_words_are_closer(server, client):
    texts = ["the cat sat on the mat", "a cat on a mat", "quantum chromodynamics lecture"]

    vectors = [item["embedding"] for item in
               client.post(EMBEDDINGS, json={"input": texts}).json()["data"]]

    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])


def test_embeddings_are_stable_and_take_a_single_string(server, client):
    first = client.post(EMBEDDINGS, json={"input": "the cat"}).json()["data"]
    second = client.post(EMBEDDINGS, json={"input": ["the cat"]}).json()["data"]

    assert len(first) == 1
    assert first[0]["embedding"] == second[0]["embedding"]


def test_embedding_dimensions_are_configurable(server, client):
    server.embedding_dimensions = 8

    vector = client.post(EMBEDDINGS, json={"input": "x"}).json()["data"][0]["embedding"]

    assert len(vector) == 8


def test_embeddings_in_base64_decode_to_the_same_floats(server, client):
    plain = client.post(EMBEDDINGS, json={"input": "a cat"}).json()["data"][0]["embedding"]
    encoded = client.post(
        EMBEDDINGS, json={"input": "a cat", "encoding_format": "base64"}
    ).json()["data"][0]["embedding"]

    decoded = struct.unpack("<64f", base64.b64decode(encoded))
    assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(decoded, plain, strict=True))


def test_queued_fault_applies_to_embeddings(server, client):
    server.add(Fault(status=429, headers={"Retry-After": "1"}))

    response = client.post(EMBEDDINGS, json={"input": "x"})

    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"


def test_embeddings_leave_queued_replies_for_chat(server, client):
    server.add(Reply(text="for chat"))

    assert client.post(EMBEDDINGS, json={"input": "x"}).status_code == 200
    server_reply = client.post(CHAT, json=USER_TURN).json()["choices"][0]["message"]["content"]
    assert server_reply == "for chat"


# -- model info and routing -------------------------------------------------------------------


def test_models_lists_the_mock_model(server, client):
    body = client.get("/models").json()

    assert body == {"object": "list",
                    "data": [{"id": "mock-model", "object": "model", "owned_by": "mock"}]}


def test_vllm_model_info_reports_max_model_len(server, client):
    server.model_info(context_window=8192, style="vllm")

    assert client.get("/models").json()["data"][0]["max_model_len"] == 8192
    assert client.get(f"{server.url}/props").status_code == 404


def test_llamacpp_model_info_reports_n_ctx_in_props(server, client):
    server.model_info(context_window=4096, style="llamacpp")

    body = client.get(f"{server.url}/props").json()

    assert body == {"default_generation_settings": {"n_ctx": 4096}}


def test_unknown_path_is_a_404_json_error(server, client):
    response = client.post("/completions", json={"prompt": "x"})

    assert response.status_code == 404
    assert "/v1/completions" in response.json()["error"]["message"]


# -- HTTP and lifecycle -----------------------------------------------------------------------


def test_raw_http_handles_expect_continue_keep_alive_and_connection_close(server):
    server.model_info(context_window=100, style="llamacpp")
    body = json.dumps({"input": "x"}).encode()
    with socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1]))) as sock:
        sock.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(body)
        sock.sendall(b"GET /props HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk

    assert received.count(b"HTTP/1.1 200 OK") == 2
    assert received.endswith(b'{"default_generation_settings": {"n_ctx": 100}}')


def test_200_concurrent_requests_are_all_answered(server):
    server.respond_with(lambda request: Reply(text=request.json["messages"][0]["content"]))

    async def ask_all() -> list[str]:
        limits = httpx.Limits(max_connections=200)
        async with httpx.AsyncClient(
            base_url=server.base_url, limits=limits, timeout=10, **NO_TLS
        ) as http:
            responses = await asyncio.gather(*(
                http.post(CHAT, json={"messages": [{"role": "user", "content": str(number)}]})
                for number in range(200)
            ))
        return [response.json()["choices"][0]["message"]["content"] for response in responses]

    assert asyncio.run(ask_all()) == [str(number) for number in range(200)]
    assert len(server.requests) == 200


def test_async_with_serves_from_inside_a_running_loop():
    async def use_server() -> str:
        async with MockLLMServer() as server:
            server.add(Reply(text="async"))
            async with httpx.AsyncClient(base_url=server.base_url, **NO_TLS) as http:
                response = await http.post(CHAT, json=USER_TURN)
        return response.json()["choices"][0]["message"]["content"]

    assert asyncio.run(use_server()) == "async"


def test_stop_leaves_no_thread_running_and_frees_the_port():
    threads_before = set(threading.enumerate())
    server = MockLLMServer().start()
    url = server.url
    with httpx.Client(**NO_TLS) as http:
        http.get(f"{url}/v1/models")  # leaves a keep-alive connection open
        server.stop()

        assert set(threading.enumerate()) <= threads_before
        with pytest.raises(httpx.ConnectError):
            http.get(f"{url}/v1/models")


def test_url_of_a_stopped_server_says_to_start_it():
    with pytest.raises(RuntimeError, match="start"):
        MockLLMServer().base_url
