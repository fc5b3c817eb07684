"""The HTML pages bandoneon writes, rendered in headless Chromium and checked for what a person sees.

Screenshots land in the test's temp folder (``pytest --basetemp=DIR`` keeps them somewhere
known); each test asserts on the rendered page, not on the HTML source.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import bandoneon
from bandoneon.cli import main
from bandoneon.testing import FunctionModel, ScriptedModel, call
from bandoneon_evals import Case, contains, evaluate
from bandoneon_tracing import Tracing

from browser import Browser, find_chromium

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium package (.ci/run installs it)")

VIEWPORTS = {"desktop": (1280, 800, False), "phone": (390, 844, True)}


@bandoneon.tool
def get_order(order_id: str) -> str:
    """Look up an order."""
    return f"Order {order_id}: a bandoneon, shipped"


@bandoneon.tool
def refund(order_id: str) -> str:
    """Refund an order."""
    raise RuntimeError(f"the payment service refused the refund of {order_id}: card expired")


@pytest.fixture(scope="module")
def trace_page(tmp_path_factory) -> Path:
    """A real run traced to JSONL (one tool that works, one that fails), then `trace show --html`."""
    folder = tmp_path_factory.mktemp("trace")
    model = ScriptedModel(call("get_order", order_id="A-17"), call("refund", order_id="A-17"), "I could not refund A-17: the card expired.")
    agent = bandoneon.Agent(model, tools=[get_order, refund], plugins=[Tracing(jsonl=str(folder / "trace.jsonl"))], context_files=False)
    assert agent.run_sync("Refund order A-17").ok
    page = folder / "trace.html"
    assert main(["trace", "show", str(folder / "trace.jsonl"), "--html", str(page)]) == 0
    return page


def caddie(request):
    """Right about hole 1 always, about hole 2 every other time, never about hole 3."""
    prompt = request.messages[0].content
    if prompt == "hole 1":
        return "Par 4, play the iron."
    if prompt == "hole 2":
        return "Par 3." if next(hole_two) % 2 else "Par 5, I think."
    return "No idea, sorry."


hole_two = itertools.count()


@pytest.fixture(scope="module")
def eval_page(tmp_path_factory) -> Path:
    cases = [Case("hole-1", "hole 1", {"contains": "Par 4"}), Case("hole-2", "hole 2", {"contains": "Par 3"}), Case("hole-3", "hole 3", {"contains": "Par 5"})]
    report = evaluate(cases, lambda: bandoneon.Agent(FunctionModel(caddie), plugins=[], context_files=False), [contains()], repeats=2, concurrency=1, progress=False, name="caddie")
    page = tmp_path_factory.mktemp("eval") / "report.html"
    page.write_text(report.html(), encoding="utf-8")
    return page


@pytest.fixture(params=sorted(VIEWPORTS))
def browser(request):
    width, height, mobile = VIEWPORTS[request.param]
    with Browser(CHROMIUM, width=width, height=height, mobile=mobile) as opened:
        opened.viewport = request.param
        yield opened


def _fits(browser: Browser) -> None:
    width = VIEWPORTS[browser.viewport][0]
    assert browser.page_width() <= width, f"the page is wider than the {browser.viewport} viewport: it scrolls sideways"


def _self_contained(browser: Browser, page: Path) -> None:
    assert browser.requested == [page.resolve().as_uri()], "the page fetched something besides itself"


def test_the_trace_waterfall_shows_the_failing_tool_in_red_and_its_error_on_click(browser, trace_page, tmp_path):
    browser.open(trace_page)
    browser.screenshot(tmp_path / f"trace-{browser.viewport}.png")
    text = browser.text()
    for span in ("execute_tool get_order", "execute_tool refund"):
        assert span in text
    failing = "[data-status='error'][data-kind='tool']"
    assert browser.evaluate(f"document.querySelectorAll(\"{failing}\").length") == 1
    colour = browser.evaluate(f"getComputedStyle(document.querySelector(\"{failing} .bar\")).backgroundColor")
    assert colour == "rgb(220, 38, 38)", "the failing tool's bar is not red"
    assert "card expired" not in browser.text(failing + " .detail")  # closed until asked for
    assert "card expired" in browser.evaluate(f"document.querySelector(\"{failing} .bar\").title")  # the hover tip
    browser.click(failing + " summary")
    assert "refund failed: the payment service refused the refund of A-17: card expired" in browser.text(failing + " .detail .message")
    browser.screenshot(tmp_path / f"trace-{browser.viewport}-error-open.png")
    ok_tools = browser.evaluate("[...document.querySelectorAll(\"[data-kind='tool'][data-status='ok'] .bar\")].map(b => getComputedStyle(b).backgroundColor)")
    assert ok_tools and "rgb(220, 38, 38)" not in ok_tools
    _fits(browser)
    _self_contained(browser, trace_page)


def test_the_eval_report_shows_each_cases_pass_rate_and_what_each_failing_run_said(browser, eval_page, tmp_path):
    browser.open(eval_page)
    browser.screenshot(tmp_path / f"eval-{browser.viewport}.png", full_page=True)
    rows = browser.evaluate("[...document.querySelectorAll('table.cases tbody tr')].map(r => [...r.cells].map(c => c.innerText))")
    rates = {row[0]: row[1] for row in rows}
    assert rates == {"hole-1": "100%", "hole-2": "50%", "hole-3": "0%"}
    assert "Pass rate 50%" in browser.text("header")
    details = browser.text("section.not-passed")
    assert "Not passed" in details
    assert "hole-3" in details and "No idea, sorry." in details
    assert "hole-2" in details and "Par 5, I think." in details
    assert "hole-1" not in details
    _fits(browser)
    _self_contained(browser, eval_page)
