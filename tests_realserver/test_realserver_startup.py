"""Waiting for a server that is still loading: with a deadline, then a clear error."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from llama_server import ServerNotReady, wait_until_ready


class _Loading(http.server.BaseHTTPRequestHandler):
    """Answers 503 to the first ``loading_for`` requests, then 200."""

    loading_for = 0
    seen = 0

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).seen += 1
        status = 503 if type(self).seen <= type(self).loading_for else 200
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"object": "list", "data": []}' if status == 200 else b'{"detail": "loading model"}')

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def loading_server() -> Iterator[tuple[str, type[_Loading]]]:
    handler = type("Handler", (_Loading,), {"loading_for": 0, "seen": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    server.shutdown()
    server.server_close()
    thread.join()


def test_a_server_that_answers_503_while_loading_is_waited_for(loading_server):
    url, handler = loading_server
    handler.loading_for = 3
    wait_until_ready(url, deadline=30, poll=0.01)
    assert handler.seen == 4


def test_a_server_still_loading_at_the_deadline_is_a_clear_error(loading_server):
    url, handler = loading_server
    handler.loading_for = 10**9
    with pytest.raises(ServerNotReady, match=r"not ready after 0.2 s; last answer: HTTP 503 \(still loading\)") as caught:
        wait_until_ready(url, deadline=0.2, poll=0.01)
    assert url in str(caught.value)


def test_nothing_listening_at_the_deadline_is_a_clear_error():
    from llama_server import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ServerNotReady, match="connection failed"):
        wait_until_ready(url, deadline=0.1, poll=0.01)
