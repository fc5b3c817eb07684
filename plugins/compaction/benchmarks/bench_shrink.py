"""How long compaction takes on a long history: 10,000 messages, squeezed into a small window.

Run: python plugins/compaction/benchmarks/bench_shrink.py   (prints the best of 20 runs, in ms)
"""

from __future__ import annotations

import time

import bandoneon
from bandoneon_compaction import estimate_tokens, message_tokens, shrink_history


def history(messages: int) -> list[bandoneon.Message]:
    out: list[bandoneon.Message] = []
    n = 0
    while len(out) < messages:
        call = bandoneon.ToolCall(f"call_{n}", "get_order", '{"order": %d}' % n)
        out += [
            bandoneon.Message.user(f"Where is order #{n}?"),
            bandoneon.Message.assistant("", [call]),
            bandoneon.Message.tool(call, f"Order {n}: " + "shipping details " * 60),
            bandoneon.Message.assistant(f"Order {n} ships tomorrow."),
        ]
        n += 1
    return out[:messages]


def best_ms(messages: list[bandoneon.Message], limit: int, runs: int = 20) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        shrink_history(messages, limit=limit, keep_recent_turns=2)
        best = min(best, time.perf_counter() - started)
    return best * 1000


if __name__ == "__main__":
    long = history(10_000)
    size = sum(message_tokens(m, estimate_tokens) for m in long)
    print(f"10,000 messages, {size:,} tokens")
    print(f"nothing to do (limit above the size): {best_ms(long, size):.1f} ms")
    print(f"truncate only (limit 60% of the size): {best_ms(long, int(size * 0.6)):.1f} ms")
    print(f"truncate and drop (limit 8,000 tokens): {best_ms(long, 8_000):.1f} ms")
