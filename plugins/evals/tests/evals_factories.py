"""Importable agent factories and scorers for CLI and Celery tests (workers import them by path)."""

import os
import time
from pathlib import Path

import bandoneon
from bandoneon.testing import FunctionModel, call
from bandoneon_evals import contains, trajectory


def echo_model(request):
    """Answers 'the answer is <prompt>' — after one `look` tool call when the prompt says 'look'."""
    prompt = request.messages[0].content
    if "look" in prompt and not any(m.role == "tool" for m in request.messages):
        return call("look")
    return f"the answer is {prompt}"


@bandoneon.tool
def look() -> str:
    """Look around."""
    return "a fairway"


def make_agent():
    usage_model = FunctionModel(echo_model, model="echo")
    return bandoneon.Agent(usage_model, tools=[look], plugins=[], context_files=False)


SCORERS = [contains(), trajectory(mode="set")]


@bandoneon.tool
def slow_swing() -> str:
    """A swing that, on its first attempt anywhere, waits until the test kills the worker."""
    flag = Path(os.environ["EVALS_TEST_FLAG_DIR"]) / "started"
    if not flag.exists():
        flag.write_text(str(os.getpid()))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the test kills this worker long before
            time.sleep(0.05)
    return "swung"


def make_slow_agent():
    def model(request):
        if not any(m.role == "tool" for m in request.messages):
            return call("slow_swing")
        return f"the answer is {request.messages[0].content}"

    return bandoneon.Agent(FunctionModel(model, model="echo"), tools=[slow_swing], plugins=[], context_files=False)


def CONTAINS_ONLY():
    return [contains()]


def make_pid_agent():
    """Like ``make_agent``, and the answer names the process that ran the case."""

    def model(request):
        reply = echo_model(request)
        return f"{reply} (pid {os.getpid()})" if isinstance(reply, str) else reply

    return bandoneon.Agent(FunctionModel(model, model="echo"), tools=[look], plugins=[], context_files=False)


def make_lazy_agent():
    """Answers at once, never looking: a regression of ``make_agent`` on cases that expect `look`."""
    return bandoneon.Agent(FunctionModel(lambda request: f"the answer is {request.messages[0].content}", model="echo"), plugins=[], context_files=False)


def make_failing_agent():
    """A model server that fails, quoting the prompt in its error."""

    def model(request):
        raise RuntimeError(f"the server refused {request.messages[0].content}")

    return bandoneon.Agent(FunctionModel(model, model="echo"), plugins=[], context_files=False)
