"""What the round-trip tests serve with ``bandoneon mcp serve``: tools and an agent factory."""

from __future__ import annotations

import time

import bandoneon
from bandoneon.testing import FunctionModel, call


@bandoneon.tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@bandoneon.tool
def book_ticket(train: int, seat_class: str) -> str:
    """Book one seat on a train."""
    return f"Booked train {train}, {seat_class} class, for Ana Pérez (DNI 30.123.456)."


def _reply(request: bandoneon.ModelRequest) -> object:
    last = request.messages[-1]
    if last.role == "user":
        return call("add", a=2, b=3)
    return f"The sum is {last.content}."


def make_agent() -> bandoneon.Agent:
    """An agent that adds with its tool, then answers (two turns)."""
    return bandoneon.Agent(FunctionModel(_reply), tools=[add], context_files=False, name="adder")


@bandoneon.tool
def open_ledger() -> str:
    """Open the ledger database."""
    raise RuntimeError(f"could not connect to postgres://app:hunter2@db/prod (config {__file__})")


@bandoneon.tool(timeout=2)
def wait_for_the_printer() -> str:
    """Wait until the printer answers (it never does); two seconds at most."""
    time.sleep(3600)
    return "printed"
