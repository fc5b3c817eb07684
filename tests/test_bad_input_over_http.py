"""Review of the core (issue 2) over loopback HTTP: every bad input of the issue reaches the model
as one sentence or fails with a typed error, and the next request a real server would get is
valid (every tool call answered). Cancellation and timeouts are checked at the socket."""

from __future__ import annotations

import asyncio
import threading

import bandoneon
import pytest
from bandoneon import tool
from bandoneon.testing import Fault, MockLLMServer, Reply


pytestmark = pytest.mark.usefixtures("only_the_core")


@tool
def book_seat(seat: str) -> str:
    """Book one seat on the 08:05 train, like 14B."""
    return f"booked {seat}"


def agent_for(server: MockLLMServer, *, tools=(book_seat,), **kwargs) -> bandoneon.Agent:
    kwargs.setdefault("plugins", [])
    kwargs.setdefault("context_files", False)
    return bandoneon.Agent(f"openai-compatible:mock@{server.base_url}", tools=list(tools), **kwargs)


def assert_wire_history_valid(messages: list[dict]) -> None:
    """What a real server checks: every assistant tool call is answered by a tool message, once,
    before the next assistant or user message; no tool message answers an unknown call."""
    pending: set[str] = set()
    for message in messages:
        role = message["role"]
        if role == "tool":
            assert message["tool_call_id"] in pending, f"tool message for unknown call {message['tool_call_id']}"
            pending.discard(message["tool_call_id"])
            continue
        assert not pending, f"unanswered tool calls {pending} before a {role} message"
        if role == "assistant":
            assert isinstance(message["content"], str)
            pending = {c["id"] for c in message.get("tool_calls", ())}
    assert not pending, f"unanswered tool calls {pending} at the end"


def told_after(server: MockLLMServer, request_index: int = 1) -> dict:
    """The last message of the request ``request_index``: what the model was told."""
    body = server.requests[request_index].json
    assert_wire_history_valid(body["messages"])
    return body["messages"][-1]


# ---------------------------------------------------------------- bad tool input from the model


@pytest.mark.parametrize(
    "arguments, sentence",
    [
        ('{"seat": "14', "The arguments for book_seat are not valid JSON"),
        ({"seat": 14}, "Field 'seat' must be a string, got 14 (an integer)."),
        ({"seat": "14B", "meal": "veg"}, "Unknown field 'meal'"),
        ({}, "Missing required field 'seat' (a string)."),
    ],
    ids=["broken-json", "wrong-type", "extra-field", "missing-field"],
)
def test_bad_arguments_over_http_reach_the_model_as_one_sentence_and_the_run_goes_on(mock_llm, arguments, sentence):
    mock_llm.add(Reply(tool_calls=[("book_seat", arguments)]), Reply(text="Sorry, fixed."))
    agent = agent_for(mock_llm)
    result = agent.run_sync("book 14B")
    told = told_after(mock_llm)
    assert told["role"] == "tool" and sentence in told["content"]
    assert told["content"].count("\n") == 0 and "Traceback" not in told["content"]
    assert (result.ok, result.text, [m.role for m in agent.messages]) == (True, "Sorry, fixed.", ["user", "assistant", "tool", "assistant"])


def test_an_unknown_tool_over_http_gets_the_list_of_available_tools(mock_llm):
    @tool
    def find_trains(to: str) -> str:
        """List the trains to one destination, with their times."""
        return "08:05"

    mock_llm.add(Reply(tool_calls=[("book_ticket", {"seat": "1A"})]), Reply(text="ok"))
    agent_for(mock_llm, tools=(book_seat, find_trains)).run_sync("book")
    told = told_after(mock_llm)
    assert told["content"] == "Error: There is no tool named 'book_ticket'. Available tools: book_seat, find_trains."


def test_a_tool_that_raises_over_http_sends_the_message_only(mock_llm):
    @tool
    def open_vault(code: str) -> str:
        """Open the bank vault with a numeric code."""
        raise PermissionError("the vault is time-locked until 09:00")

    mock_llm.add(Reply(tool_calls=[("open_vault", {"code": "1234"})]), Reply(text="Later."))
    agent_for(mock_llm, tools=(open_vault,)).run_sync("open it")
    content = told_after(mock_llm)["content"]
    assert "open_vault failed: the vault is time-locked until 09:00" in content
    assert "Traceback" not in content and "File " not in content and ".py" not in content


def test_a_tool_that_hangs_over_http_is_cut_by_tool_timeout_and_the_model_is_told(mock_llm):
    release = asyncio.Event()

    @tool
    async def count_stars() -> str:
        """Count every star in the sky (never finishes)."""
        await release.wait()
        return "many"

    mock_llm.add(Reply(tool_calls=[("count_stars", {})]), Reply(text="Too many to count."))
    result = agent_for(mock_llm, tools=(count_stars,), tool_timeout=0.05).run_sync("how many stars?")
    assert "longer than 0.05 seconds" in told_after(mock_llm)["content"]
    assert result.text == "Too many to count."


def test_a_hook_that_raises_over_http_names_the_plugin_and_the_next_run_is_accepted(mock_llm):
    class Auditor:
        name = "auditor"
        is_full = True

        @bandoneon.hookimpl
        def after_tool_execution(self, result):
            if self.is_full:
                raise OSError("audit log is full")

    mock_llm.add(Reply(tool_calls=[("book_seat", {"seat": "1A"}), ("book_seat", {"seat": "1B"})]), Reply(text="next run"))
    agent = agent_for(mock_llm, plugins=[Auditor()])
    with pytest.raises(bandoneon.PluginError, match="'auditor'.*after_tool_execution.*audit log is full") as caught:
        agent.run_sync("book two")
    assert (caught.value.plugin, caught.value.hook) == ("auditor", "after_tool_execution")
    agent.plugin("auditor").is_full = False  # the operator empties the log
    assert agent.run_sync("again").text == "next run"
    assert_wire_history_valid(mock_llm.requests[1].json["messages"])


def test_tool_calls_under_finish_reason_stop_run_over_http(mock_llm):
    mock_llm.add(Reply(tool_calls=[("book_seat", {"seat": "2C"})], finish_reason="stop"), Reply(text="done"))
    result = agent_for(mock_llm).run_sync("book 2C")
    assert told_after(mock_llm)["content"] == "booked 2C" and result.text == "done"


async def test_a_streamed_call_cut_off_by_length_is_not_run_over_http(mock_llm):
    ran: list[str] = []

    @tool
    def send_money(to: str, amount: int) -> str:
        """Send money to one account number."""
        ran.append(to)
        return "sent"

    mock_llm.add(Reply(tool_calls=[("send_money", '{"to": "ES91 2100 0418", "amou')], finish_reason="length"), Reply(text="I was cut off."))
    agent = agent_for(mock_llm, tools=(send_money,))
    [event async for event in agent.stream("pay")]
    told = told_after(mock_llm)
    assert ran == [] and "cut off" in told["content"]
    assert mock_llm.requests[0].json["stream"] is True


# ---------------------------------------------------------------- bad replies from the server


async def test_a_stream_cut_in_the_middle_of_a_tool_call_runs_nothing_and_keeps_the_history_valid(mock_llm):
    ran: list[str] = []

    @tool
    def delete_file(path: str) -> str:
        """Delete one file by its path, like /tmp/a.txt."""
        ran.append(path)
        return "deleted"

    mock_llm.add(Reply(tool_calls=[("delete_file", {"path": "/home/ana/thesis-final-final.docx"})], cut_stream_after=3), Reply(text="again"))
    agent = agent_for(mock_llm, tools=(delete_file,))
    with pytest.raises(bandoneon.StreamInterrupted):
        async for _ in agent.stream("clean up"):
            pass
    assert ran == [] and [m.role for m in agent.messages] == ["user"]
    assert (await agent.run("try again")).text == "again"
    assert_wire_history_valid(mock_llm.requests[-1].json["messages"])


async def test_a_401_on_a_streamed_request_is_an_auth_error(mock_llm):
    mock_llm.add(Fault(status=401, body='{"error": {"message": "invalid key"}}'))
    with pytest.raises(bandoneon.AuthError, match="invalid key"):
        async for _ in agent_for(mock_llm).stream("hi"):
            pass


@pytest.mark.parametrize("body, message", [("<html>502 bad gateway</html>", "not JSON"), ('{"choices": []}', "no choices")])
async def test_a_streamed_request_answered_with_a_bad_document_is_a_bad_response(mock_llm, body, message):
    """A proxy that ignores ``stream: true`` and answers a plain document: not JSON, or empty choices."""
    mock_llm.respond_with(lambda request: Fault(status=200, body=body))
    agent = agent_for(mock_llm)
    with pytest.raises(bandoneon.BadResponse, match=message):
        async for _ in agent.stream("hi"):
            pass
    assert [m.role for m in agent.messages] == ["user"]


def test_the_request_timeout_is_a_network_error_saying_it_timed_out(mock_llm):
    mock_llm.add(Reply(text="late", delay=5))
    provider = bandoneon.OpenAICompatible("mock", base_url=mock_llm.base_url, timeout=0.1)
    agent = bandoneon.Agent(provider, plugins=[], context_files=False)
    with pytest.raises(bandoneon.NetworkError, match="timed out"):
        agent.run_sync("hi")


async def test_a_streamed_request_that_times_out_says_it_timed_out(mock_llm):
    mock_llm.add(Reply(text="late", delay=5))
    provider = bandoneon.OpenAICompatible("mock", base_url=mock_llm.base_url, timeout=0.1)
    agent = bandoneon.Agent(provider, plugins=[], context_files=False)
    with pytest.raises(bandoneon.NetworkError) as caught:
        async for _ in agent.stream("hi"):
            pass
    assert "timed out" in str(caught.value) and not str(caught.value).endswith(": ")


# ---------------------------------------------------------------- cancellation and time, at the socket


async def _hanging_server():
    """A TCP server that reads a request and never answers; ``closed`` is set when the client hangs up."""
    connected, closed = asyncio.Event(), asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        connected.set()
        while await reader.read(65536):
            pass
        closed.set()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], connected, closed


@pytest.mark.parametrize("how", ["agent.cancel", "task.cancel", "run_timeout"])
async def test_cancellation_and_run_timeout_reach_the_http_request(how):
    server, port, connected, closed = await _hanging_server()
    async with server:
        agent = bandoneon.Agent(
            f"openai-compatible:m@http://127.0.0.1:{port}/v1",
            plugins=[], context_files=False, run_timeout=0.2 if how == "run_timeout" else None,
        )
        task = asyncio.create_task(agent.run("hi"))
        await asyncio.wait_for(connected.wait(), 5)
        if how == "agent.cancel":
            agent.cancel()
        elif how == "task.cancel":
            task.cancel()
        (outcome,) = await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 5)
        await asyncio.wait_for(closed.wait(), 5)  # the client hung up: the request itself was cut
    if how == "task.cancel":
        assert isinstance(outcome, asyncio.CancelledError)
    else:
        assert outcome.stop == ("cancelled" if how == "agent.cancel" else "timeout")
    assert [m.role for m in agent.messages] == ["user"]


def test_agent_cancel_from_another_thread_stops_run_sync_waiting_on_the_server(mock_llm):
    mock_llm.add(Reply(text="too late", delay=30))
    agent = agent_for(mock_llm)
    started = threading.Event()
    agent.on("provider_request", lambda event: started.set())
    canceller = threading.Thread(target=lambda: started.wait(5) and agent.cancel())
    canceller.start()
    result = agent.run_sync("hi")
    canceller.join()
    assert (result.stop, result.ok) == ("cancelled", False)


# ---------------------------------------------------------------- providers and configuration


@pytest.mark.parametrize("prefix", ["openai", "ollama", "vllm", "lmstudio", "llamacpp", "llama-cpp-python"])
def test_every_named_server_speaks_to_its_url_and_sends_the_bare_model_name(mock_llm, prefix):
    mock_llm.add(Reply(text=f"hi from {prefix}"))
    agent = bandoneon.Agent(f"{prefix}:llama3.1@{mock_llm.base_url}", plugins=[], context_files=False)
    assert agent.run_sync("hi").text == f"hi from {prefix}"
    assert mock_llm.requests[0].json["model"] == "llama3.1"
    assert agent.provider.name == prefix


@pytest.mark.parametrize(
    "prefix, url",
    [("ollama", "http://localhost:11434/v1"), ("vllm", "http://localhost:8000/v1"), ("lmstudio", "http://localhost:1234/v1"),
     ("llamacpp", "http://localhost:8080/v1"), ("openai", "https://api.openai.com/v1")],
)
def test_named_servers_default_to_their_usual_address(prefix, url, monkeypatch):
    for variable in ("BANDONEON_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the hosted service is refused without one
    assert bandoneon.resolve_model(f"{prefix}:m").base_url == url


def test_openai_api_key_is_the_fallback_key(mock_llm, monkeypatch):
    monkeypatch.delenv("BANDONEON_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    mock_llm.add(Reply(text="hi"))
    agent_for(mock_llm).run_sync("hi")
    assert mock_llm.requests[0].headers["authorization"] == "Bearer sk-openai"


def test_bandoneon_api_key_wins_over_openai_api_key(mock_llm, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("BANDONEON_API_KEY", "sk-bandoneon")
    mock_llm.add(Reply(text="hi"))
    agent_for(mock_llm).run_sync("hi")
    assert mock_llm.requests[0].headers["authorization"] == "Bearer sk-bandoneon"


def test_openai_base_url_is_the_fallback_address(mock_llm, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for variable in ("BANDONEON_BASE_URL", "BANDONEON_MODEL", "BANDONEON_CONFIG"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", mock_llm.base_url)
    mock_llm.add(Reply(text="via OPENAI_BASE_URL"))
    assert bandoneon.Agent(plugins=[], context_files=False).run_sync("hi").text == "via OPENAI_BASE_URL"


def test_the_config_file_wins_over_the_environment_and_arguments_win_over_both(mock_llm, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BANDONEON_CONFIG", raising=False)
    monkeypatch.setenv("BANDONEON_MODEL", f"openai-compatible:from-env@{mock_llm.base_url}")
    (tmp_path / "bandoneon.toml").write_text(f'model = "openai-compatible:from-file@{mock_llm.base_url}"\nmax_turns = 4\n')
    assert bandoneon.Agent(plugins=[], context_files=False).provider.model == "from-file"
    agent = bandoneon.Agent(f"openai-compatible:from-args@{mock_llm.base_url}", max_turns=9, plugins=[], context_files=False)
    assert (agent.provider.model, agent.max_turns) == ("from-args", 9)


def test_api_key_env_in_the_config_file_names_the_variable_holding_the_key(mock_llm, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BANDONEON_CONFIG", raising=False)
    monkeypatch.setenv("ACME_KEY", "sk-acme")
    (tmp_path / "bandoneon.toml").write_text(f'model = "openai-compatible:m@{mock_llm.base_url}"\napi_key_env = "ACME_KEY"\n')
    mock_llm.add(Reply(text="hi"))
    bandoneon.Agent(plugins=[], context_files=False).run_sync("hi")
    assert mock_llm.requests[0].headers["authorization"] == "Bearer sk-acme"


def test_sampling_options_and_tool_choice_reach_the_wire(mock_llm):
    mock_llm.add(Reply(tool_calls=[("book_seat", {"seat": "1A"})]), Reply(text="ok"))
    agent_for(mock_llm, tool_choice="required", settings={"temperature": 0, "top_p": 0.9, "seed": 7}).run_sync("go")
    body = mock_llm.requests[0].json
    assert (body["tool_choice"], body["temperature"], body["top_p"], body["seed"]) == ("required", 0, 0.9, 7)


async def test_the_run_end_event_carries_the_error_when_the_server_fails(mock_llm):
    mock_llm.add(Fault(status=401, body='{"error": {"message": "bad key"}}'))
    agent = agent_for(mock_llm)
    ends = []
    agent.on("run_end", ends.append)
    with pytest.raises(bandoneon.AuthError):
        await agent.run("hi")
    assert ends[0].reason == "error" and "401" in ends[0].error and "bad key" in ends[0].error


def test_bandoneon_base_url_is_not_silently_ignored_with_a_named_provider(mock_llm, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BANDONEON_CONFIG", raising=False)
    monkeypatch.setenv("BANDONEON_MODEL", "ollama:llama3.1")
    monkeypatch.setenv("BANDONEON_BASE_URL", mock_llm.base_url)
    try:
        agent = bandoneon.Agent(plugins=[], context_files=False)
    except bandoneon.ConfigError as exc:  # refusing the combination, saying why, is fine too
        assert "BANDONEON_BASE_URL" in str(exc)
        return
    assert agent.provider.base_url == mock_llm.base_url
