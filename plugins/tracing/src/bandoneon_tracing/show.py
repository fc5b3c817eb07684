"""``bandoneon trace show FILE``: a JSONL trace file as a timeline, in the terminal or as HTML.

The terminal view is a tree with start offsets, durations and a bar per span; ``--html
OUT`` writes one self-contained page (inline CSS, no scripts, nothing fetched) with the
waterfall: model calls blue, tools orange, errors red — the track's colours. Each row opens
on click to show the span's error and attributes; it reads on a phone as on a desktop.

A trace file may come from someone else, and its names, errors and attributes hold model and
tool text: both views show that text, never obey it. The terminal view writes out what a
terminal would act on (``bandoneon.for_terminal``); the page escapes all of it, so a file can
add no tag, attribute or script.
"""

from __future__ import annotations

import argparse
import html
import math
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import bandoneon
from bandoneon import for_terminal

from .exporters import TraceFileError, read_jsonl
from .spans import Span

__all__ = ["register", "render_html", "render_text"]

BAR_WIDTH = 30
#: Deeper spans are indented as this deep (their order still shows the tree): past it, a
#: name no longer fits its column, and a file nesting thousands of spans would push it off screen.
DEEPEST_INDENT = 10


def register(subparsers: Any) -> None:
    trace = subparsers.add_parser("trace", help="look at traces written by bandoneon-tracing")
    commands = trace.add_subparsers(title="trace commands", metavar="COMMAND")
    trace.set_defaults(handler=lambda _args: _print_help(trace))
    show = commands.add_parser("show", help="print a trace file as a timeline (or --html PAGE)")
    show.add_argument("file", help="a JSONL file written by the tracing plugin's jsonl option")
    show.add_argument("--html", metavar="PAGE", help="also write a self-contained HTML waterfall to PAGE")
    show.add_argument("--trace", metavar="ID", help="only the trace whose id starts with ID")
    show.set_defaults(handler=show_command)


def _print_help(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 1


def show_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    spans = _read(args.file)
    if spans is None:
        return 1
    if args.trace:
        spans = [s for s in spans if s.trace_id.startswith(args.trace)]
    if not spans:
        _complain(f"no spans in {args.file}" + (f" for trace {args.trace}" if args.trace else ""))
        return 1
    out.write(render_text(spans))
    if args.html:
        try:
            bandoneon.write_atomically(args.html, render_html(spans))
        except OSError as exc:
            _complain(f"{args.html}: {exc.strerror or exc}")
            return 1
        print(for_terminal(f"wrote {args.html}"), file=out)
    return 0


def _read(file: str) -> list[Span] | None:
    """The file's spans, or None once the reason it has none is printed."""
    try:
        return read_jsonl(file)
    except FileNotFoundError:
        _complain(f"{file}: no such file")
    except OSError as exc:
        _complain(f"{file}: {exc.strerror or exc}")
    except TraceFileError as exc:
        _complain(str(exc))
    return None


def _complain(message: str) -> None:
    """An error on stderr; it may quote the file (a bad value), so it is shown, not obeyed."""
    print(for_terminal(f"bandoneon trace show: {message}"), file=sys.stderr)


def group_traces(spans: Sequence[Span]) -> list[list[Span]]:
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    return list(traces.values())


def _tree(spans: Sequence[Span]) -> list[tuple[int, Span]]:
    """Every span exactly once, depth-first in start order, with its depth. Orphans are roots;
    after their trees, the earliest span no root reaches (a parent cycle's) roots one more, until
    none is left. Walked with a stack, not recursion: a damaged or hostile file may nest thousands deep."""
    ids = {s.span_id for s in spans}
    roots: list[Span] = []
    children: dict[str, list[Span]] = {}
    for span in spans:
        parent = span.parent_id
        if parent is None or parent == span.span_id or parent not in ids:
            roots.append(span)
        else:
            children.setdefault(parent, []).append(span)
    ordered: list[tuple[int, Span]] = []
    shown: set[int] = set()
    for root in [*_by_start(roots), *_by_start(spans)]:
        if id(root) not in shown:
            _walk(root, children, shown, ordered)
    return ordered


def _by_start(spans: Sequence[Span]) -> list[Span]:
    return sorted(spans, key=lambda s: s.start)


def _walk(root: Span, children: dict[str, list[Span]], shown: set[int], ordered: list[tuple[int, Span]]) -> None:
    """Appends ``root`` and what hangs under it. A span id's children are taken once, so a
    duplicated id does not show them twice; ``shown`` (by object) stops a cycle."""
    stack = [(0, root)]
    while stack:
        depth, span = stack.pop()
        if id(span) in shown:
            continue
        shown.add(id(span))
        ordered.append((depth, span))
        stack.extend((depth + 1, child) for child in reversed(_by_start(children.pop(span.span_id, []))))


def _indent(depth: int) -> int:
    return min(depth, DEEPEST_INDENT)


def _share(part: float, whole: float) -> float:
    """``part / whole`` kept within 0..1 (0 when it is not a number): a damaged file's times
    (an end before its start, spans 1e308 seconds apart) still draw a bar, inside the lane."""
    share = part / whole
    return min(max(share, 0.0), 1.0) if math.isfinite(share) else 0.0


def _money(cost: Any) -> str:
    """A cost in dollars; a cost that is not a number (a damaged file) is shown as it is."""
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        try:
            return f"${cost:.6f}"
        except OverflowError:  # an int too large for a float
            pass
    return f"cost={cost}"


def _summary(span: Span) -> str:
    """One line on tokens, cost, retries and errors. Attribute values are whatever the file
    holds, so only the cost gets a number format (in ``_money``), the rest is shown as text."""
    a = span.attributes
    parts = []
    if "gen_ai.usage.input_tokens" in a:
        parts.append(f"{a['gen_ai.usage.input_tokens']} in / {a.get('gen_ai.usage.output_tokens', 0)} out")
    if a.get("bandoneon.cost") is not None:
        parts.append(_money(a["bandoneon.cost"]))
    if a.get("bandoneon.retries"):
        parts.append(f"{a['bandoneon.retries']} retries")
    if span.kind == "run" and "bandoneon.stop_reason" in a:
        parts.append(f"stop={a['bandoneon.stop_reason']}")
    if span.status == "error":
        parts.append(f"ERROR: {(span.error or '')[:80]}")
    return "  ".join(parts)


def _one_line(text: str) -> str:
    """Outside text for one row of the terminal view: shown, not obeyed, and kept on its row
    (a newline in a name or an error would otherwise draw a row of its own)."""
    return for_terminal(text).replace("\n", "\\n").replace("\t", "\\t")


def render_text(spans: Sequence[Span]) -> str:
    """The terminal view: a tree per trace with offsets, durations, a bar and a summary."""
    lines: list[str] = []
    for trace in group_traces(spans):
        start = min(s.start for s in trace)
        end = max((s.end or s.start) for s in trace)
        total = max(end - start, 1e-9)
        lines.append(f"trace {_one_line(trace[0].trace_id)}  {len(trace)} spans  {total * 1000:.1f} ms")
        for depth, span in _tree(trace):
            offset = span.start - start
            left = int(_share(offset, total) * BAR_WIDTH)
            width = max(1, int(_share(span.duration, total) * BAR_WIDTH))
            bar = " " * left + ("!" if span.status == "error" else "#") * min(width, BAR_WIDTH - left)
            label = ("  " * _indent(depth) + _one_line(span.name))[:48]
            lines.append(f"  {label:<48} +{offset * 1000:8.1f} ms {span.duration * 1000:8.1f} ms |{bar:<{BAR_WIDTH}}| {_one_line(_summary(span))}".rstrip())
        lines.append("")
    return "\n".join(lines)


_COLOURS = {"run": "#6b7280", "turn": "#9ca3af", "model": "#3b82f6", "tool": "#f59e0b"}
_ERROR = "#dc2626"

_CSS = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#111}
h1{font-size:20px}h2{font-size:15px;margin:1.5em 0 .5em}
.legend span{display:inline-block;padding:0 .6em;margin:0 .5em .3em 0;color:#fff;border-radius:2px}
details{border-bottom:1px solid #eee}
summary{display:flex;align-items:center;min-height:24px;cursor:pointer;list-style:none}
summary::-webkit-details-marker{display:none}
summary:hover{background:#f3f4f6}
.label{flex:0 0 16em;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font-family:monospace;line-height:1.6}
.lane{position:relative;flex:1;height:14px;background:#fafafa;min-width:6em}
.bar{position:absolute;top:0;height:14px;border-radius:2px;min-width:2px}
.meta{flex:0 0 18em;padding-left:1em;font-size:12px;color:#555;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.error .label,.error .meta{color:#b91c1c;font-weight:600}
.detail{margin:.3em 0 .6em 1em;font-size:12px;overflow-wrap:anywhere}
.detail .message{color:#b91c1c;font-weight:600;white-space:pre-wrap}
.detail dl{display:grid;grid-template-columns:max-content 1fr;gap:.1em 1em;margin:.3em 0}
.detail dt{color:#555;font-family:monospace}.detail dd{margin:0;white-space:pre-wrap}
@media (max-width:700px){
 body{margin:.8em}
 summary{flex-wrap:wrap}
 .label{flex:1 1 100%}
 .lane{flex:1 1 100%;margin:2px 0}
 .meta{flex:1 1 100%;padding-left:0;white-space:normal}
}
"""


def _html(value: Any, limit: int | None = None) -> str:
    """Outside text for the page, cut to ``limit`` characters, then escaped (quotes too: it
    may go in an attribute). ``for_terminal`` first writes out controls, bidi overrides and
    lone surrogates: they would reorder what a reader sees, and a surrogate cannot even be
    written to the file as UTF-8."""
    return html.escape(for_terminal(str(value))[:limit], quote=True)


def _detail(span: Span) -> str:
    """What a click on the row opens: the error in full, then every attribute."""
    rows = "".join(f"<dt>{_html(k)}</dt><dd>{_html(v, 2000)}</dd>" for k, v in span.attributes.items())
    message = f"<p class='message'>{_html(span.error or 'error')}</p>" if span.status == "error" else ""
    return f"<div class='detail'>{message}<dl><dt>duration</dt><dd>{span.duration * 1000:.1f} ms</dd>{rows}</dl></div>"


def _tip(span: Span) -> str:
    """The bar's tooltip: name, duration, error and attributes, as plain text."""
    tip = f"{span.name}\n{span.duration * 1000:.1f} ms" + (f"\nERROR: {span.error}" if span.status == "error" else "")
    return tip + "\n" + "\n".join(f"{k} = {v}" for k, v in span.attributes.items())


def _row(span: Span, depth: int, start: float, total: float) -> str:
    """One span's row: label, bar in its lane, summary; its details open on click."""
    left = _share(span.start - start, total) * 100
    width = max(_share(span.duration, total) * 100, 0.2)
    is_error = span.status == "error"
    colour = _ERROR if is_error else _COLOURS.get(span.kind, "#6b7280")
    return (
        f"<details class='span{' error' if is_error else ''}' data-kind='{_html(span.kind)}' data-status='{_html(span.status)}'><summary>"
        f"<span class='label' style='padding-left:{_indent(depth) * 1.2:.1f}em'>{_html(span.name)}</span>"
        f"<span class='lane'><span class='bar' title='{_html(_tip(span), 2000)}' style='left:{left:.3f}%;width:{width:.3f}%;background:{colour}'></span></span>"
        f"<span class='meta'>{span.duration * 1000:.1f} ms {_html(_summary(span))}</span></summary>{_detail(span)}</details>"
    )


def render_html(spans: Sequence[Span]) -> str:
    """One self-contained page (no scripts, nothing fetched): a waterfall per trace; each row
    opens on click to show its error and attributes, and its bar's tooltip says the same."""
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'><title>bandoneon trace</title>",
        f"<style>{_CSS}</style></head><body><h1>bandoneon trace</h1>",
        "<p class='legend'>" + "".join(f"<span style='background:{c}'>{k}</span>" for k, c in _COLOURS.items())
        + f"<span style='background:{_ERROR}'>error</span> Click a row for its details.</p>",
    ]
    for trace in group_traces(spans):
        start = min(s.start for s in trace)
        total = max(max((s.end or s.start) for s in trace) - start, 1e-9)
        failed = sum(s.status == "error" for s in trace)
        parts.append(
            f"<h2>trace {_html(trace[0].trace_id)} · {len(trace)} span{'s' if len(trace) != 1 else ''} · {total * 1000:.1f} ms"
            + (f" · <span style='color:{_ERROR}'>{failed} failed</span>" if failed else "") + "</h2>"
        )
        parts.extend(_row(span, depth, start, total) for depth, span in _tree(trace))
    parts.append("</body></html>")
    return "".join(parts)
