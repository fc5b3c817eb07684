"""simonw/llm's side of the peer comparison: the 2-turn run as a ``Conversation.chain`` on an
in-process fake model, timed as called (the default: llm's sync API). Prints {"median_s": ...} last.

The fake model is an ``llm.Model`` subclass with ``supports_tools = True``, registered through a
``register_models`` plugin hook and fetched back with ``llm.get_model`` as any installed model is. Its
``execute`` adds a get_forecast ``ToolCall`` to the response, or, once ``prompt.tool_results`` carries
the tool's output, yields the answer text. llm's chain loop runs the tool and feeds the result back.
``--mode async`` runs the same on an ``llm.AsyncModel`` through ``AsyncConversation.chain``, awaited
inside one running event loop.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("OPENAI_API_KEY", "sk-fake-never-used")
_USER_PATH = tempfile.mkdtemp(prefix="llm-bench-")
atexit.register(shutil.rmtree, _USER_PATH, ignore_errors=True)
os.environ["LLM_USER_PATH"] = _USER_PATH  # no user config, keys or logs read

import llm
from _protocol import ANSWER, OBSERVATION, PROMPT, get_forecast, main, median_of, median_of_async


def _turn(prompt: llm.Prompt, response) -> str | None:
    """The scripted model: the answer once the tool's output came back, else a tool call."""
    if prompt.tool_results:
        assert prompt.tool_results[0].output == OBSERVATION, prompt.tool_results
        response.set_usage(input=20, output=8)
        return ANSWER
    response.add_tool_call(llm.ToolCall(name="get_forecast", arguments={"city": "Paris"}, tool_call_id="call_1"))
    response.set_usage(input=10, output=5)
    return None


class TwoTurnModel(llm.Model):
    model_id = "bench-two-turn"
    supports_tools = True

    def execute(self, prompt, stream, response, conversation):
        text = _turn(prompt, response)
        if text is not None:
            yield text


class AsyncTwoTurnModel(llm.AsyncModel):
    model_id = "bench-two-turn"
    supports_tools = True

    async def execute(self, prompt, stream, response, conversation):
        text = _turn(prompt, response)
        if text is not None:
            yield text


class BenchPlugin:
    __name__ = "llm_bench_two_turn"

    @llm.hookimpl
    def register_models(self, register):
        register(TwoTurnModel(), AsyncTwoTurnModel())


def main_sync(iterations: int) -> float:
    model = llm.get_model("bench-two-turn")
    assert isinstance(model, TwoTurnModel), model

    def run() -> None:
        chain = model.conversation(tools=[get_forecast]).chain(PROMPT)
        text = chain.text()
        assert text == ANSWER, text
        assert len(chain._responses) == 2, chain._responses  # tool call, then the answer

    return median_of(run, iterations)


async def main_async(iterations: int) -> float:
    model = llm.get_async_model("bench-two-turn")
    assert isinstance(model, AsyncTwoTurnModel), model

    async def run() -> None:
        chain = model.conversation(tools=[get_forecast]).chain(PROMPT)
        text = await chain.text()
        assert text == ANSWER, text
        assert len(chain._responses) == 2, chain._responses

    return await median_of_async(run, iterations)


def measure(args):
    llm.plugins.pm.register(BenchPlugin(), name="llm_bench_two_turn")
    return main_sync(args.iterations) if args.mode == "sync" else main_async(args.iterations)


if __name__ == "__main__":
    main("llm", measure, {"--mode": {"choices": ("sync", "async"), "default": "sync"}})
