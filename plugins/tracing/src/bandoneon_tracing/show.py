"""``bandoneon trace show FILE``: a JSONL trace file as a timeline, in the terminal or as HTML.

The terminal view is a tree with start offsets, durations and a bar per span; ``--html
OUT`` writes one self-contained page (inline CSS, no scripts, nothing fetched) with the
waterfall: model calls blue, tools orange, errors red — the track's colours. Each row opens
on click to show the span's error and attributes; it reads on a phone as on a desktop.
"""

from __future__ import annotations

import argparse
import html
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import bandoneon

from .exporters import TraceFileError, read_jsonl
from .spans import Span

__all__ = ["register", "render_html", "render_text"]

BAR_WIDTH = 30


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
    try:
        spans = read_jsonl(args.file)
    except FileNotFoundError:
        print(f"bandoneon trace show: {args.file}: no such file", file=sys.stderr)
        return 1
    except TraceFileError as exc:
        print(f"bandoneon trace show: {exc}", file=sys.stderr)
        return 1
    if args.trace:
        spans = [s for s in spans if s.trace_id.startswith(args.trace)]
    if not spans:
        print(f"bandoneon trace show: no spans in {args.file}" + (f" for trace {args.trace}" if args.trace else ""), file=sys.stderr)
        return 1
    out.write(render_text(spans))
    if args.html:
        bandoneon.write_atomically(args.html, render_html(spans))
        print(f"wrote {args.html}", file=out)
    return 0


def group_traces(spans: Sequence[Span]) -> list[list[Span]]:
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    return list(traces.values())


def _tree(spans: Sequence[Span]) -> list[tuple[int, Span]]:
    """Spans depth-first in start order, with their depth; orphans are treated as roots."""
    ids = {s.span_id for s in spans}
    children: dict[str | None, list[Span]] = {}
    for span in spans:
        parent = span.parent_id if span.parent_id in ids else None
        children.setdefault(parent, []).append(span)
    ordered: list[tuple[int, Span]] = []

    def walk(parent: str | None, depth: int) -> None:
        for span in sorted(children.get(parent, ()), key=lambda s: s.start):
            ordered.append((depth, span))
            walk(span.span_id, depth + 1)

    walk(None, 0)
    return ordered


def _summary(span: Span) -> str:
    a = span.attributes
    parts = []
    if "gen_ai.usage.input_tokens" in a:
        parts.append(f"{a['gen_ai.usage.input_tokens']} in / {a.get('gen_ai.usage.output_tokens', 0)} out")
    if a.get("bandoneon.cost") is not None:
        parts.append(f"${a['bandoneon.cost']:.6f}")
    if a.get("bandoneon.retries"):
        parts.append(f"{a['bandoneon.retries']} retries")
    if span.kind == "run" and "bandoneon.stop_reason" in a:
        parts.append(f"stop={a['bandoneon.stop_reason']}")
    if span.status == "error":
        parts.append(f"ERROR: {(span.error or '')[:80]}")
    return "  ".join(parts)


def render_text(spans: Sequence[Span]) -> str:
    lines: list[str] = []
    for trace in group_traces(spans):
        start = min(s.start for s in trace)
        end = max((s.end or s.start) for s in trace)
        total = max(end - start, 1e-9)
        lines.append(f"trace {trace[0].trace_id}  {len(trace)} spans  {total * 1000:.1f} ms")
        for depth, span in _tree(trace):
            offset = span.start - start
            left = int(offset / total * BAR_WIDTH)
            width = max(1, int(span.duration / total * BAR_WIDTH))
            bar = " " * left + ("!" if span.status == "error" else "#") * min(width, BAR_WIDTH - left)
            label = ("  " * depth + span.name)[:48]
            lines.append(f"  {label:<48} +{offset * 1000:8.1f} ms {span.duration * 1000:8.1f} ms |{bar:<{BAR_WIDTH}}| {_summary(span)}".rstrip())
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


def _detail(span: Span) -> str:
    """What a click on the row opens: the error in full, then every attribute."""
    rows = "".join(f"<dt>{html.escape(str(k))}</dt><dd>{html.escape(str(v))[:2000]}</dd>" for k, v in span.attributes.items())
    message = f"<p class='message'>{html.escape(span.error or 'error')}</p>" if span.status == "error" else ""
    return f"<div class='detail'>{message}<dl><dt>duration</dt><dd>{span.duration * 1000:.1f} ms</dd>{rows}</dl></div>"


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
            f"<h2>trace {html.escape(trace[0].trace_id)} · {len(trace)} span{'s' if len(trace) != 1 else ''} · {total * 1000:.1f} ms"
            + (f" · <span style='color:{_ERROR}'>{failed} failed</span>" if failed else "") + "</h2>"
        )
        for depth, span in _tree(trace):
            left = (span.start - start) / total * 100
            width = max(span.duration / total * 100, 0.2)
            is_error = span.status == "error"
            colour = _ERROR if is_error else _COLOURS.get(span.kind, "#6b7280")
            tip = f"{span.name}\n{span.duration * 1000:.1f} ms" + (f"\nERROR: {span.error}" if is_error else "")
            tip += "\n" + "\n".join(f"{k} = {v}" for k, v in span.attributes.items())
            parts.append(
                f"<details class='span{' error' if is_error else ''}' data-kind='{html.escape(span.kind)}' data-status='{span.status}'><summary>"
                f"<span class='label' style='padding-left:{depth * 1.2}em'>{html.escape(span.name)}</span>"
                f"<span class='lane'><span class='bar' title=\"{html.escape(tip[:2000], quote=True)}\" style='left:{left:.3f}%;width:{width:.3f}%;background:{colour}'></span></span>"
                f"<span class='meta'>{span.duration * 1000:.1f} ms {html.escape(_summary(span))}</span></summary>{_detail(span)}</details>"
            )
    parts.append("</body></html>")
    return "".join(parts)
