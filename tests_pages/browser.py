"""A small headless-Chromium driver for page tests: the DevTools protocol over a pipe.

``chromium --remote-debugging-pipe`` reads protocol messages on file descriptor 3 and writes
them on 4, each a JSON object ended by a NUL byte. A ``sh -c 'exec ... 3<&0 4>&1'`` wrapper
puts those two on our stdin/stdout pipes, so nothing beyond the standard library and Debian's
``chromium`` package is needed: no websocket client, no browser download.

Enough of the protocol for a person's view of a page: a viewport, navigation, evaluating
JavaScript, moving, hovering and clicking the mouse, screenshots, and every URL the page asked
for (a self-contained page asks for nothing but itself).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["Browser", "find_chromium"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page. Use as a context manager."""

    def __init__(self, executable: str, *, width: int = 1280, height: int = 800, mobile: bool = False):
        self._profile = tempfile.mkdtemp(prefix="bandoneon-chromium-")
        arguments = [
            executable,
            "--headless",
            "--remote-debugging-pipe",
            "--no-sandbox",  # tests run as root in CI containers, where the setuid sandbox is refused
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--hide-scrollbars",
            f"--user-data-dir={self._profile}",
            "about:blank",
        ]
        self._process = subprocess.Popen(
            ["sh", "-c", 'exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>/dev/null', *arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._ids = itertools.count(1)
        self._buffer = b""
        self.events: list[dict[str, Any]] = []
        target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.requested: list[str] = []
        self.command("Page.enable")
        self.command("Network.enable")
        self.command("Runtime.enable")
        self.resize(width, height, mobile=mobile)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._send("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        shutil.rmtree(self._profile, ignore_errors=True)

    # ---------------------------------------------------------------- the protocol

    def _write(self, message: dict[str, Any]) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(message).encode() + b"\0")
        self._process.stdin.flush()

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        while b"\0" not in self._buffer:
            chunk = os.read(self._process.stdout.fileno(), 1 << 16)
            if not chunk:
                raise BrowserError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None) -> dict[str, Any]:
        message_id = next(self._ids)
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._write(message)
        while True:
            reply = self._read()
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            self._event(reply)

    def _event(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if event.get("method") == "Network.requestWillBeSent":
            self.requested.append(event["params"]["request"]["url"])

    def command(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A command to the page."""
        return self._send(method, params, session=self._session)

    def wait_for(self, method: str) -> dict[str, Any]:
        """The next event ``method`` of the page (events already seen are not waited for again)."""
        for index, event in enumerate(self.events):
            if event.get("method") == method:
                del self.events[index]
                return event
        while True:
            event = self._read()
            self._event(event)
            if event.get("method") == method:
                self.events.remove(event)
                return event

    # ---------------------------------------------------------------- what a person does

    def resize(self, width: int, height: int, *, mobile: bool = False) -> None:
        self.command("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})

    def open(self, path: Path) -> None:
        self.command("Page.navigate", {"url": path.resolve().as_uri()})
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.command("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} raised: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def centre(self, selector: str) -> tuple[float, float]:
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        if box is None:
            raise BrowserError(f"nothing on the page matches {selector!r}")
        return box[0], box[1]

    def hover(self, selector: str) -> None:
        x, y = self.centre(selector)
        self.command("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def click(self, selector: str) -> None:
        x, y = self.centre(selector)
        self.command("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            self.command("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def text(self, selector: str = "body") -> str:
        """What a person can read in ``selector``: rendered text (hidden parts left out)."""
        return self.evaluate(f"document.querySelector({json.dumps(selector)}).innerText")

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.command("Page.captureScreenshot", params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def page_width(self) -> int:
        """The width of the page's content: wider than the viewport means sideways scrolling."""
        return int(self.evaluate("document.documentElement.scrollWidth"))
