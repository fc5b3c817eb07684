"""Level 7 · The backpack fills up: a bike shop's support chat with a small window.

A customer's order #4471 came with a bent front wheel. Three requests, one history: the
agent looks the order up, searches the parts catalog, then opens a return. Order and catalog
results are big, so the history outgrows the window by the third request. Before each model
call the compaction plugin checks the request's size against 80% of the window and, oldest
first, turns old tool results into one-line notes (the tools can run again), drops old
exchanges whole if that is not enough, and never touches the first request, the last two
requests, or the return receipt (``create_return`` is ``rerunnable=False``: running it twice
would open two returns).

``agent.messages`` is what the model is sent; ``agent.transcript`` keeps everything.

Run it against any model (``BANDONEON_MODEL``, ``bandoneon.toml``, or a local one)::

    python examples/level_07_compaction.py
"""

from __future__ import annotations

from typing import Annotated

import bandoneon
from bandoneon_compaction import Compaction, is_note

# The window compaction fits in. A real model's window is learned from the server or set with
# Agent(context_window=...); the plugin's own `window` is a smaller budget on top (the smaller wins).
WINDOW = 2_200

ORDERS = {
    4471: {
        "customer": "Ana Ruiz",
        "items": [{"part": "WH-700C-F", "name": "700c front wheel, 32 spokes", "price": 89.0}],
        "shipping": "Delivered 2026-11-20 by BiciExpress, tracking BX-55120",
    }
}

CATALOG = [
    ("WH-700C-F", "700c front wheel, 32 spokes", 89.0, 4),
    ("WH-700C-R", "700c rear wheel, 32 spokes, 11-speed hub", 129.0, 2),
    ("WH-650B-F", "650b front wheel, 28 spokes", 79.0, 0),
    ("TU-700C", "700c inner tube, presta valve", 7.5, 40),
]

RETURNS: list[str] = []


@bandoneon.tool
def get_order(order: Annotated[int, "the order number, without #"]) -> str:
    """Everything about one order: items, shipping, invoice."""
    found = ORDERS.get(order)
    if found is None:
        raise bandoneon.ToolError(f"There is no order {order}. Ask the customer to check the number on the invoice.")
    invoice = "\n".join(f"invoice line {n}: VAT breakdown, payment reference PAY-{order}-{n}" for n in range(1, 40))
    return f"Order {order} for {found['customer']}. Items: {found['items']}. Shipping: {found['shipping']}.\n{invoice}"


@bandoneon.tool
def search_parts(query: Annotated[str, "words to look for, e.g. '700c front wheel'"]) -> str:
    """Search the parts catalog, with stock and price for each match."""
    words = query.lower().split()
    matches = [row for row in CATALOG if any(w in row[1].lower() or w in row[0].lower() for w in words)]
    if not matches:
        return f"No part matches {query!r}."
    lines = [f"{code} | {name} | {price:.2f} EUR | in stock: {stock} | specs: rim 19mm, ETRTO 622, weight 890 g, QR axle" for code, name, price, stock in matches]
    return "\n".join(lines * 6)  # the catalog repeats fitment tables per warehouse: big, like real ones


@bandoneon.tool(rerunnable=False)
def create_return(order: Annotated[int, "the order number"], part: Annotated[str, "the part code, e.g. WH-700C-F"]) -> str:
    """Open a return for an order and ship a replacement part. Runs once per return."""
    if order not in ORDERS:
        raise bandoneon.ToolError(f"There is no order {order}.")
    rma = f"RMA-{order}-{len(RETURNS) + 1}"
    RETURNS.append(rma)
    return f"Return {rma} opened for order {order}; replacement {part} ships tomorrow. Label: https://shop.example/labels/{rma}"


def build_agent(model=None) -> bandoneon.Agent:
    return bandoneon.Agent(
        model,
        tools=[get_order, search_parts, create_return],
        system_prompt="You are the support assistant of a bike shop. Use the tools; quote order and part numbers exactly.",
        context_files=False,
        max_turns=10,
        plugins=[Compaction(window=WINDOW, threshold=0.8, keep_recent_turns=2)],
    )


def main(model=None) -> bandoneon.RunResult:
    RETURNS.clear()
    agent = build_agent(model)
    agent.on("tool_end", lambda event: print(f"  {event.call.name}: {len(event.output):,} characters"))
    agent.on("compaction", lambda event: print(f"  compaction: {event.tokens_before:,} -> {event.tokens_after:,} tokens; {'; '.join(event.removed)}"))
    result = None
    for prompt in (
        "Hi! My order #4471 came with a bent front wheel. Can you help?",
        "Is that same wheel in stock?",
        "Great. Open a return for my order and ship me the new wheel.",
    ):
        print(f"> {prompt}")
        result = agent.run_sync(prompt)
        print(f"{result.text}  [stop={result.stop}]")
    shortened = sum(is_note(m.content) for m in agent.messages)
    print(f"working history: {len(agent.messages)} messages, {shortened} shortened to a note; transcript: {len(agent.transcript)} messages, intact")
    assert result is not None
    return result


if __name__ == "__main__":
    main()
