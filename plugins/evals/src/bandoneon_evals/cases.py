"""Grow the dataset from real failures: a recorded run becomes an eval case, its trace the evidence.

Two sources: a trace written by the tracing plugin (its JSONL file format: one span a line),
or a session saved by the sessions plugin (its JSONL records). A trace is read as a file,
through its documented format. A session is loaded by the sessions plugin when it is installed,
so the case holds what resuming it would (each turn's results in the order of its calls, a
damaged file's valid part); without it, the file is read through its documented format.

The case keeps what a replay needs in ``metadata``: ``tools`` (what the model could choose
from), ``replies`` (the model's replies in order, for ``replay_model``), ``outcome`` (how the
recorded run ended) and ``evidence`` (where the run is recorded). A replay re-runs *your* code
(tools, hooks, plugins) against the model's recorded choices, so a bug in a tool or a policy
shows as a failing case until it is fixed; what the model would say after the fix needs a
real model and a scorer on the answer.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import bandoneon

from .dataset import Case, DatasetError, json_problem, jsonl_lines, load_dataset

__all__ = ["add_case", "case_from_messages", "case_from_trace", "parse_expect", "read_source"]

TRUNCATED = "… ["  # what the tracing plugin appends to a text it shortened
OK_STOPS = ("end_turn", "terminal_tool")


def case_from_trace(
    path: str | os.PathLike[str],
    *,
    span: str | None = None,
    expect: Any = None,
    case_id: str | None = None,
    tags: Sequence[str] = ("regression",),
) -> Case:
    """The case of one run of a tracing JSONL file: the run holding ``span`` (a span id or a
    unique prefix of one), else the file's last top-level run."""
    spans = _read_spans(Path(path))
    by_id = {s["span_id"]: s for s in spans}
    run = _pick_run(spans, span, path, by_id)
    children: dict[str, list[dict[str, Any]]] = {}
    for item in spans:
        children.setdefault(item.get("parent_id") or "", []).append(item)
    attributes = run.get("attributes") or {}
    prompt = attributes.get("bandoneon.prompt")
    if not isinstance(prompt, str):
        raise DatasetError(f"{path}: run {run['span_id']} has no prompt in its trace (was it traced with capture_content=False?); nothing to replay")
    replies, warnings = _replies_of(run, children)
    called = [call["name"] for reply in replies for call in reply["message"]["tool_calls"]]
    tool_spans = [s for s in _descendants(run, children) if s.get("kind") == "tool" and _run_of(s, by_id) is run]
    stop = attributes.get("bandoneon.stop_reason")
    outcome = {
        "stop": stop,
        "ok": stop in OK_STOPS,
        "text": next((r["message"]["content"] for r in reversed(replies) if r["message"]["content"]), None),
        "error": run.get("error"),
        "turns": attributes.get("bandoneon.turns"),
        "tool_errors": [(s.get("attributes") or {}).get("gen_ai.tool.name") for s in tool_spans if s.get("status") == "error"],
    }
    evidence = {"trace": str(Path(path).resolve()), "trace_id": run["trace_id"], "span_id": run["span_id"]}
    tools = attributes.get("bandoneon.tools") or sorted(set(called))
    return _build(case_id or f"trace-{run['span_id'][:12]}", prompt, expect, tags, tools, replies, outcome, evidence, warnings)


def case_from_messages(
    messages: Iterable[bandoneon.Message],
    *,
    expect: Any = None,
    case_id: str,
    evidence: Mapping[str, Any] | None = None,
    tags: Sequence[str] = ("regression",),
) -> Case:
    """The case of the last exchange of a history (a saved session, ``agent.messages``): its last
    user message is the input, the assistant messages after it are the replies; earlier messages
    are kept as ``metadata.history`` (the conversation the run started from)."""
    history = list(messages)
    last_user = next((n for n in range(len(history) - 1, -1, -1) if history[n].role == "user"), None)
    if last_user is None:
        raise DatasetError(f"{case_id}: the history has no user message; nothing to make a case of")
    after = history[last_user + 1 :]
    replies = [
        bandoneon.unstructure(bandoneon.ModelReply(m, "tool_calls" if m.tool_calls else "stop"))
        for m in after
        if m.role == "assistant"
    ]
    text = next((m.content for m in reversed(after) if m.role == "assistant" and m.content), None)
    outcome = {"stop": None, "ok": None, "text": text, "error": None, "turns": len(replies), "tool_errors": [m.name for m in after if m.role == "tool" and m.is_error]}
    tools = sorted({c.name for m in after for c in m.tool_calls})
    extra = {"history": [bandoneon.unstructure(m) for m in history[:last_user]]} if last_user else {}
    return _build(case_id, history[last_user].content, expect, tags, tools, replies, outcome, dict(evidence or {}), [], extra)


def read_source(path: str | os.PathLike[str], *, span: str | None = None, expect: Any = None, case_id: str | None = None, tags: Sequence[str] = ("regression",)) -> Case:
    """A case from a trace or a saved session file, told apart by their first record."""
    source = Path(path)
    first = _first_record(source)
    if first.get("type") != "session":
        return case_from_trace(source, span=span, expect=expect, case_id=case_id, tags=tags)
    if span is not None:
        raise DatasetError(f"{source}: --span picks a run of a trace; a saved session has one conversation (its last exchange is used)")
    messages, damage = _session_messages(source)
    case = case_from_messages(messages, expect=expect, case_id=case_id or f"session-{first.get('id', source.stem)}", evidence={"session": str(source.resolve())}, tags=tags)
    if damage is None:
        return case
    return attrs.evolve(case, metadata={**case.metadata, "replay_warnings": [f"the session file is damaged: {damage}"]})


def add_case(
    source: str | os.PathLike[str] | Case,
    to: str | os.PathLike[str],
    *,
    span: str | None = None,
    expect: Any = None,
    case_id: str | None = None,
    tags: Sequence[str] = ("regression",),
) -> Case:
    """Append the case of a recorded run (a trace or session file, or a ``Case``) to the JSONL
    dataset ``to``. The dataset is checked with ``load_dataset`` before and after, and written
    atomically: a duplicate id or a broken dataset is refused and the file is left as it was."""
    case = source if isinstance(source, Case) else read_source(source, span=span, expect=expect, case_id=case_id, tags=tags)
    target = Path(to)
    if target.suffix not in (".jsonl", ".ndjson"):
        raise DatasetError(f"{target}: cases are appended to a .jsonl dataset")
    existing = _dataset_text(target)
    if existing.strip():
        ids = {c.id for c in load_dataset(target)}
        if case.id in ids:
            raise DatasetError(f"{target}: a case with the id {case.id!r} is already there; pass another id (--id)")
    line = json.dumps(case.to_json(), ensure_ascii=False, default=str)
    Case.from_json(json.loads(line), f"{target}: new case")
    separator = "" if not existing or existing.endswith("\n") else "\n"
    bandoneon.write_atomically(target, existing + separator + line + "\n")
    return case


def _dataset_text(path: Path) -> str:
    """The dataset a case is appended to, as text ("" when there is none yet)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DatasetError(f"{path}:{line}: not UTF-8") from None


def parse_expect(items: Sequence[str]) -> dict[str, Any] | None:
    """``["tool_errors=0", "tools=iron,putt", "contains=Holed out"]`` → the case's ``expected``.

    A value is JSON when it reads as JSON, else text; ``tools`` with commas is a list."""
    expected: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise DatasetError(f"--expect {item!r}: write KEY=VALUE (tool_errors=0, stop=end_turn, contains=TEXT, tools=a,b)")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = [t.strip() for t in raw.split(",") if t.strip()] if key == "tools" else raw
        expected[key.strip()] = value
    return expected or None


# ---------------------------------------------------------------- reading traces


def _written_traces() -> None:
    """Write the traces this process still queues: the tracing plugin writes its JSONL file
    from a thread, in batches, so a run that just ended may not be in the file yet. Through
    ``sys.modules``: evals needs the tracing plugin neither installed nor imported."""
    tracing = sys.modules.get("bandoneon_tracing")
    if tracing is not None:
        tracing.flush()


def _first_record(path: Path) -> dict[str, Any]:
    _written_traces()
    try:
        # Bytes, decoded a line at a time: a text file decodes ahead of the line it returns, so a
        # byte that is not UTF-8 in a later record would fail the first one (as a raw error).
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
                if raw.strip():
                    try:
                        record = bandoneon.loads_bounded(_record_text(raw.decode("utf-8")))
                    except UnicodeDecodeError as exc:
                        raise DatasetError(f"{path}:{number}: not UTF-8 (byte {exc.start + 1})") from None
                    except ValueError as exc:
                        raise DatasetError(f"{path}:{number}: not JSON ({json_problem(exc)}); expected a tracing JSONL trace or a saved session") from None
                    if not isinstance(record, dict):
                        raise DatasetError(f"{path}:{number}: expected a span or a session record, got {type(record).__name__}")
                    return record
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such trace or session file") from None
    raise DatasetError(f"{path}: the file is empty")


def _record_text(line: str) -> str:
    """A line without the checksum a saved session (format 2) puts after a tab: JSON text
    never holds a raw tab, so the part before the last one is the record."""
    return line.rsplit("\t", 1)[0]


def _read_spans(path: Path) -> list[dict[str, Any]]:
    spans, seen = [], set()
    try:
        lines = jsonl_lines(path)  # not splitlines(): a span's text may hold a raw U+2028
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such trace file") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = bandoneon.loads_bounded(line)  # a hostile line may nest without end
        except ValueError as exc:
            raise DatasetError(f"{path}:{number}: not JSON ({json_problem(exc)})") from None
        if not isinstance(data, dict) or not {"span_id", "trace_id", "kind", "start"} <= data.keys():
            raise DatasetError(f"{path}:{number}: not a span of a tracing JSONL trace")
        problem = _span_problem(data) or (f"its span_id {data['span_id']!r} is another span's too" if data["span_id"] in seen else None)
        if problem:
            raise DatasetError(f"{path}:{number}: not a span of a tracing JSONL trace: {problem}")
        seen.add(data["span_id"])
        spans.append(data)
    if not spans:
        raise DatasetError(f"{path}: the trace is empty")
    return spans


#: The fields of a span a case is made of, and what each must be (the tracing plugin writes
#: them so; a file edited by hand or by someone else may not). The first four are never null.
_SPAN_FIELDS: dict[str, tuple[type, ...]] = {"span_id": (str,), "trace_id": (str,), "kind": (str,), "start": (int, float), "parent_id": (str,), "status": (str,), "attributes": (dict,)}
_REQUIRED = ("span_id", "trace_id", "kind", "start")
_TEXT, _NAMES, _COUNT = "text", "a list of strings", "a token count"
_ATTRIBUTES = {
    **dict.fromkeys(("bandoneon.prompt", "bandoneon.output", "bandoneon.tool.arguments", "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.response.model"), _TEXT),
    **dict.fromkeys(("bandoneon.tools", "bandoneon.tool_calls", "gen_ai.response.finish_reasons"), _NAMES),
    **dict.fromkeys(("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"), _COUNT),
}


def _span_problem(span: dict[str, Any]) -> str | None:
    """What is wrong with a span's fields (None: nothing), so that reading the run never meets
    a number where text belongs, or a span that is its own child (an empty id)."""
    for field, kinds in _SPAN_FIELDS.items():
        value = span.get(field)
        if (value is not None or field in _REQUIRED) and (type(value) not in kinds or (field == "span_id" and not value)):
            return f"its {field} is {json.dumps(value)[:40]}"
    attributes = span.get("attributes") or {}
    for key, kind in _ATTRIBUTES.items():
        value = attributes.get(key)
        if value is not None and not _is_a(kind, value):
            return f"its attribute {key} is not {kind}"
    return None


def _is_a(kind: str, value: Any) -> bool:
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _NAMES:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return type(value) is int and value >= 0


def _pick_run(spans: list[dict[str, Any]], span: str | None, path: Any, by_id: dict[str, Any]) -> dict[str, Any]:
    if span is None:
        roots = [s for s in spans if s["kind"] == "run" and not s.get("parent_id")]
        if not roots:
            raise DatasetError(f"{path}: the trace has no run span")
        return max(roots, key=lambda s: s["start"])
    matches = [s for s in spans if s["span_id"].startswith(span)]
    if len(matches) != 1:
        found = "no span" if not matches else f"{len(matches)} spans"
        raise DatasetError(f"{path}: {found} with an id starting {span!r}; `bandoneon trace show {path}` lists the spans")
    run = _run_of(matches[0], by_id)
    if run is None:
        raise DatasetError(f"{path}: span {span!r} is not inside a run")
    return run


def _run_of(span: dict[str, Any], by_id: dict[str, Any]) -> dict[str, Any] | None:
    """The nearest run span at or above ``span`` (a subagent's spans belong to its own run)."""
    current: dict[str, Any] | None = span
    passed = set()
    while current is not None and current["kind"] != "run":
        passed.add(current["span_id"])
        parent = current.get("parent_id") or ""
        current = None if parent in passed else by_id.get(parent)  # parents in a circle: in no run
    return current


def _descendants(root: dict[str, Any], children: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    found, stack, seen = [], list(children.get(root["span_id"], ())), {root["span_id"]}
    while stack:
        item = stack.pop()
        if item["span_id"] not in seen:  # a run inside a circle of parents is its own descendant
            seen.add(item["span_id"])
            found.append(item)
            stack.extend(children.get(item["span_id"], ()))
    return found


def _replies_of(run: dict[str, Any], children: dict[str, list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The model's replies, in order: each model span's text with the tool calls of its turn.
    A plugin's side call (``bandoneon.side_call``: a summary, a wrap-up) is not one of them: a
    replay answers the run's turns, and the plugins that made the side calls are the replaying
    agent's to switch on or off."""
    replies: list[dict[str, Any]] = []
    warnings: list[str] = []
    turns = sorted((s for s in children.get(run["span_id"], ()) if s["kind"] == "turn"), key=lambda s: s["start"])
    for turn in turns:
        inside = sorted(children.get(turn["span_id"], ()), key=lambda s: s["start"])
        for model in (s for s in inside if s["kind"] == "model"):
            attributes = model.get("attributes") or {}
            if model.get("status") == "error" and "gen_ai.response.model" not in attributes:
                continue  # the call failed: there is no reply to replay
            if attributes.get("bandoneon.side_call"):
                continue
            names = list(attributes.get("bandoneon.tool_calls") or ())
            calls = []
            for tool in (s for s in inside if s["kind"] == "tool"):
                tool_attributes = tool.get("attributes") or {}
                if names and tool_attributes.get("gen_ai.tool.name") == names[0]:
                    names.pop(0)
                    arguments = tool_attributes.get("bandoneon.tool.arguments")
                    if arguments is None or TRUNCATED in arguments:
                        warnings.append(f"turn {attributes.get('bandoneon.turn')}: the arguments of {tool_attributes['gen_ai.tool.name']} are not in the trace in full")
                    calls.append({"id": tool_attributes.get("gen_ai.tool.call.id") or tool["span_id"], "name": tool_attributes["gen_ai.tool.name"], "arguments": arguments or "{}"})
            text = attributes.get("bandoneon.output") or ""
            if TRUNCATED in text:
                warnings.append(f"turn {attributes.get('bandoneon.turn')}: the model's text was shortened in the trace")
            reasons = attributes.get("gen_ai.response.finish_reasons") or ["tool_calls" if calls else "stop"]
            usage = {
                "input_tokens": attributes.get("gen_ai.usage.input_tokens") or 0,
                "output_tokens": attributes.get("gen_ai.usage.output_tokens") or 0,
                "requests": 1,
            }
            message = bandoneon.Message.assistant(text, [bandoneon.ToolCall(c["id"], c["name"], c["arguments"]) for c in calls])
            reply = bandoneon.ModelReply(message, reasons[0], bandoneon.structure(usage, bandoneon.Usage), attributes.get("gen_ai.response.model"))
            replies.append(bandoneon.unstructure(reply))
    return replies, warnings


def _session_messages(path: Path) -> tuple[list[bandoneon.Message], str | None]:
    """The history of a saved session file and its damage (None: none), as the sessions plugin
    loads it: a case must hold what resuming the session would, not a reading that disagrees
    with it. Without the plugin, the file is read through its format (``_session_records``)."""
    try:
        from bandoneon_sessions import JsonlStore, SessionError
    except ImportError:
        return _session_records(path), None
    if path.suffix != ".jsonl":  # the store reads <id>.jsonl: another name would load another file
        raise DatasetError(f"{path}: the sessions plugin loads a saved session from <session id>.jsonl; name the file so")
    try:
        loaded = JsonlStore(path.parent).load(path.stem)
    except SessionError as exc:
        raise DatasetError(f"{path}: {exc}") from None
    if loaded.damage is not None and not any(m.role == "user" for m in loaded.messages):
        raise DatasetError(f"{path}: {loaded.damage}; nothing before it to make a case of")
    return list(loaded.messages), loaded.damage


def _session_records(path: Path) -> list[bandoneon.Message]:
    """The history of a saved session file read through its format (its ``message`` and
    ``clear`` records, in file order); a record that cannot be read is a ``DatasetError``."""
    messages: list[bandoneon.Message] = []
    for number, line in enumerate(jsonl_lines(path), 1):  # not splitlines(): see jsonl_lines
        if not line.strip():
            continue
        try:
            record = bandoneon.loads_bounded(_record_text(line))
            if record.get("type") == "message":
                messages.append(bandoneon.structure(record["message"], bandoneon.Message))
            elif record.get("type") == "clear":
                messages.clear()
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DatasetError(f"{path}:{number}: not a session record ({type(exc).__name__}: {str(exc)[:120]})") from None
    return messages


def _build(case_id: str, prompt: str, expect: Any, tags: Sequence[str], tools: Sequence[str], replies: list[dict[str, Any]], outcome: dict[str, Any], evidence: dict[str, Any], warnings: list[str], extra: dict[str, Any] | None = None) -> Case:
    metadata: dict[str, Any] = {"tools": list(tools), "replies": replies, "outcome": outcome, "evidence": evidence, **(extra or {})}
    if warnings:
        metadata["replay_warnings"] = warnings
    return Case(case_id, prompt, expect, tuple(tags), metadata)
