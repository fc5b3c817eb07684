"""``bandoneon trace show FILE``: a JSONL trace file as a timeline, in the terminal or as HTML.

The terminal view is a tree with start offsets, durations and a bar per span; ``--html
OUT`` writes one self-contained page (inline CSS, no scripts, nothing fetched) with the
waterfall: model calls blue, tools orange, errors red — the track's colours.
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

_CSS = """
body{font:14px system-ui,sans-serif;margin:2em;color:#111}
h2{font-size:15px;margin:1.5em 0 .5em}
.row{display:flex;align-items:center;height:22px;border-bottom:1px solid #eee}
.label{width:32em;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font-family:monospace}
.lane{position:relative;flex:1;height:14px;background:#fafafa}
.bar{position:absolute;top:0;height:14px;border-radius:2px;min-width:2px}
.meta{width:22em;padding-left:1em;font-size:12px;color:#555;white-space:nowrap;overflow:hidden}
.legend span{display:inline-block;padding:0 .6em;margin-right:.5em;color:#fff;border-radius:2px}
"""


def render_html(spans: Sequence[Span]) -> str:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>bandoneon trace</title>",
        f"<style>{_CSS}</style></head><body><h1>bandoneon trace</h1>",
        "<p class='legend'>" + "".join(f"<span style='background:{c}'>{k}</span>" for k, c in _COLOURS.items()) + "<span style='background:#dc2626'>error</span></p>",
    ]
    for trace in group_traces(spans):
        start = min(s.start for s in trace)
        total = max(max((s.end or s.start) for s in trace) - start, 1e-9)
        parts.append(f"<h2>trace {html.escape(trace[0].trace_id)} · {total * 1000:.1f} ms</h2>")
        for depth, span in _tree(trace):
            left = (span.start - start) / total * 100
            width = max(span.duration / total * 100, 0.2)
            colour = "#dc2626" if span.status == "error" else _COLOURS.get(span.kind, "#6b7280")
            tip = html.escape(f"{span.name}\n{span.duration * 1000:.1f} ms\n" + "\n".join(f"{k} = {v}" for k, v in span.attributes.items())[:2000], quote=True)
            parts.append(
                "<div class='row'>"
                f"<div class='label' style='padding-left:{depth * 1.2}em'>{html.escape(span.name)}</div>"
                f"<div class='lane'><div class='bar' title=\"{tip}\" style='left:{left:.3f}%;width:{width:.3f}%;background:{colour}'></div></div>"
                f"<div class='meta'>{span.duration * 1000:.1f} ms {html.escape(_summary(span))}</div></div>"
            )
    parts.append("</body></html>")
    return "".join(parts)
