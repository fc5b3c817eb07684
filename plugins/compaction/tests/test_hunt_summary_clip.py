"""A summariser that ignores ``max_tokens``: its summary is clipped to ``summary_tokens`` as the
plugin's own counter measures it (not four characters per token), so it still fits the room
kept for it and stands in for what was dropped."""

from __future__ import annotations

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_compaction import Compaction
from bandoneon_compaction._tokens import message_tokens


@bandoneon.tool
def get_order(order: int) -> str:
    """Look up an order."""
    return f"order {order}: a bent 700c front wheel"


@pytest.mark.parametrize(("counter", "window"), [(None, 2_000), (len, 8_000)])
def test_a_long_summary_is_clipped_to_its_budget_and_kept(counter, window):
    model = ScriptedModel(context_window=window)
    model.add(call("get_order", order=4471), "Order 4471: the front wheel is bent.")
    model.add("Sure, the 700c wheel is in stock.")
    model.add("Summary: order #4471, bent 700c front wheel; wheel in stock. " + "More detail. " * 2_000)  # ignores max_tokens
    model.add("Return opened for order #4471.")
    plugin = Compaction(keep_recent_turns=1, summarize=True, summary_tokens=100, count_tokens=counter)
    agent = bandoneon.Agent(model, tools=[get_order], plugins=[plugin], context_files=False)
    events: list = []
    agent.on("compaction", events.append)
    agent.run_sync("My order #4471 came with a bent front wheel.")
    agent.run_sync("Is the wheel in stock? " + "Please check carefully. " * 200)
    agent.run_sync("Open a return for my order. " + "Thanks a lot. " * 200)
    assert events and any("summarised" in line for line in events[-1].removed), events
    summary = model.requests[-1].messages[1]
    assert summary.role == "assistant" and "order #4471" in summary.content
    assert message_tokens(summary, counter or (lambda text: -(-len(text) // 4))) <= 100
