"""The testing kit's loopback server, in a process of its own, answering the 2-turn scenario.

HTTP benchmarks talk to it from another process, so the server does not compete with the
client under measurement for the interpreter lock.

    python benchmarks/mock_server_process.py     # prints the base URL, serves until stdin closes
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scenarios  # noqa: E402


def two_turn_reply(request: object) -> object:
    from bandoneon.testing import Reply

    messages = request.json["messages"]  # type: ignore[attr-defined]
    if messages[-1]["role"] == "tool":
        return Reply(text=scenarios.ANSWER, usage=(20, 8))
    return Reply(tool_calls=[("get_forecast", {"city": "Paris"})], usage=(10, 5))


@contextlib.contextmanager
def serving() -> Iterator[str]:
    """Start the server process; yield its base URL; stop it."""
    process = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


if __name__ == "__main__":
    from bandoneon.testing import MockLLMServer

    with MockLLMServer() as server:
        server.respond_with(two_turn_reply)
        print(server.base_url, flush=True)
        sys.stdin.read()
