"""Latency from a streamed delta leaving a loopback server to bandoneon's ``text_delta`` event.

The server (a raw asyncio socket server in a thread of this process) stamps each chunk with
``time.perf_counter()`` when it writes it; the listener subtracts on arrival.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import bandoneon


def _chunk(text: str) -> bytes:
    payload = json.dumps({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})
    data = f"data: {payload}\n\n".encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


class _StampingServer:
    def __init__(self, count: int):
        self.count = count
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        headers = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in headers.split(b"\r\n") if line.lower().startswith(b"content-length"))
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for _ in range(self.count):
            writer.write(_chunk(f"{time.perf_counter()!r} "))
            await writer.drain()
            await asyncio.sleep(0.0005)
        done = json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        body = f"data: {done}\n\ndata: [DONE]\n\n".encode()
        writer.write(f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
        await writer.drain()
        writer.close()

    def __enter__(self) -> _StampingServer:
        self.thread.start()
        self.ready.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()


async def delta_latencies(count: int) -> list[float]:
    latencies: list[float] = []
    with _StampingServer(count) as server:
        agent = bandoneon.Agent(f"openai-compatible:bench@http://127.0.0.1:{server.port}/v1", plugins=[], context_files=False)

        def on_delta(event: bandoneon.TextDelta) -> None:
            latencies.append(time.perf_counter() - float(event.text))

        agent.on("text_delta", on_delta)
        await agent.run("stream")
    return latencies
