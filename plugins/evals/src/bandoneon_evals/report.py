"""The scorecard: pass rate per case and overall, per scorer, with tokens, cost and latency;
as a terminal table, JSON, markdown or HTML; and the comparison of two JSON reports.

Errored runs (the run raised or timed out, a scorer raised, the judge answered nonsense)
count in the denominator and never as passes: an eval that cannot grade a case does not
get to call it good.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

import bandoneon

from .dataset import Case
from .runner import CaseRun

__all__ = ["CaseSummary", "Regression", "Report", "compare", "load_report"]


@attrs.frozen
class CaseSummary:
    case_id: str
    runs: tuple[CaseRun, ...]
    tags: tuple[str, ...] = ()

    @property
    def passed(self) -> int:
        return sum(r.status == "passed" for r in self.runs)

    @property
    def errored(self) -> int:
        return sum(r.status == "errored" for r in self.runs)

    @property
    def pass_rate(self) -> float:
        return self.passed / len(self.runs) if self.runs else 0.0

    @property
    def input_tokens(self) -> int:
        return sum(r.input_tokens for r in self.runs)

    @property
    def output_tokens(self) -> int:
        return sum(r.output_tokens for r in self.runs)

    @property
    def cost(self) -> float | None:
        costs = [r.cost for r in self.runs if r.cost is not None]
        return sum(costs) if costs else None

    @property
    def mean_latency(self) -> float:
        return sum(r.latency for r in self.runs) / len(self.runs) if self.runs else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.case_id,
            "tags": list(self.tags),
            "runs": [r.to_json() for r in self.runs],
            "passed": self.passed,
            "errored": self.errored,
            "pass_rate": self.pass_rate,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
            "mean_latency": self.mean_latency,
        }


@attrs.frozen
class Report:
    name: str
    cases: tuple[CaseSummary, ...]
    repeats: int = 1
    wall_time: float = 0.0

    @classmethod
    def build(cls, name: str, cases: Sequence[Case], runs: Sequence[CaseRun], *, repeats: int, wall_time: float) -> Report:
        by_case: dict[str, list[CaseRun]] = {c.id: [] for c in cases}
        for run in runs:
            by_case[run.case_id].append(run)
        return cls(name, tuple(CaseSummary(c.id, tuple(by_case[c.id]), c.tags) for c in cases), repeats, wall_time)

    @property
    def runs(self) -> list[CaseRun]:
        return [r for c in self.cases for r in c.runs]

    @property
    def pass_rate(self) -> float:
        runs = self.runs
        return sum(r.status == "passed" for r in runs) / len(runs) if runs else 0.0

    @property
    def totals(self) -> dict[str, Any]:
        runs = self.runs
        costs = [r.cost for r in runs if r.cost is not None]
        return {
            "runs": len(runs),
            "passed": sum(r.status == "passed" for r in runs),
            "failed": sum(r.status == "failed" for r in runs),
            "errored": sum(r.status == "errored" for r in runs),
            "pass_rate": self.pass_rate,
            "input_tokens": sum(r.input_tokens for r in runs),
            "output_tokens": sum(r.output_tokens for r in runs),
            "cost": sum(costs) if costs else None,
            "mean_latency": sum(r.latency for r in runs) / len(runs) if runs else 0.0,
            "wall_time": self.wall_time,
        }

    @property
    def by_scorer(self) -> dict[str, float]:
        """Pass rate of each scorer over every run that reached scoring."""
        counts: dict[str, list[int]] = {}
        for run in self.runs:
            for score in run.scores:
                passed, total = counts.setdefault(score.scorer, [0, 0])
                counts[score.scorer] = [passed + (score.passed and not score.error), total + 1]
        return {name: passed / total for name, (passed, total) in counts.items()}

    def case(self, case_id: str) -> CaseSummary:
        for summary in self.cases:
            if summary.case_id == case_id:
                return summary
        raise KeyError(case_id)

    # ---------------------------------------------------------------- outputs

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "repeats": self.repeats, "totals": self.totals, "by_scorer": self.by_scorer, "cases": [c.to_json() for c in self.cases]}

    def write_json(self, path: str | os.PathLike[str]) -> None:
        bandoneon.write_atomically(path, json.dumps(self.to_json(), indent=2, ensure_ascii=False))

    def table(self) -> str:
        """The scorecard for the terminal. Case ids and errors come from datasets, models and
        tools: their control characters are written out (``bandoneon.for_terminal``), never obeyed."""
        scorer_names = list(self.by_scorer)
        header = ["case", "pass", *scorer_names, "tokens", "cost", "latency"]
        rows = [header]
        for summary in self.cases:
            cells = [bandoneon.for_terminal(summary.case_id), f"{summary.passed}/{len(summary.runs)}"]  # escaped before the columns are measured
            for name in scorer_names:
                cells.append(_scorer_cell(summary, name))
            cells += [str(summary.input_tokens + summary.output_tokens), _money(summary.cost), f"{summary.mean_latency * 1000:.0f} ms"]
            rows.append(cells)
        t = self.totals
        rows.append(["TOTAL", f"{t['passed']}/{t['runs']}", *[f"{self.by_scorer[n]:.0%}" for n in scorer_names], str(t["input_tokens"] + t["output_tokens"]), _money(t["cost"]), f"{t['mean_latency'] * 1000:.0f} ms"])
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        lines.insert(len(lines) - 1, "  ".join("-" * w for w in widths))
        verdict = f"pass rate {self.pass_rate:.0%} ({t['passed']} passed, {t['failed']} failed, {t['errored']} errored of {t['runs']} runs)"
        problems = [bandoneon.for_terminal(f"  {r.case_id}#{r.repeat}: {r.error}") for r in self.runs if r.error]
        return "\n".join([bandoneon.for_terminal(self.title), *lines, verdict, *(["errors:", *problems] if problems else [])]) + "\n"

    @property
    def title(self) -> str:
        """``eval NAME``, or just ``eval`` for an eval that was not named (never "eval eval")."""
        return "eval" if self.name in ("", "eval") else f"eval {self.name}"

    def not_passed(self) -> list[tuple[CaseRun, str]]:
        """Each run that did not pass, with why: its error, or each failing scorer's detail."""
        return [
            (r, r.error or "; ".join(f"{s.scorer}: {s.detail}" for s in r.scores if not s.passed))
            for r in self.runs
            if r.status != "passed"
        ]

    def markdown(self) -> str:
        """The scorecard as Markdown (a CI job summary, say). Case ids and reasons are escaped
        text and answers code blocks (``bandoneon.markdown_text`` / ``markdown_code``): a
        model's answer cannot render a link, a heading or an image the viewer would fetch."""
        text = bandoneon.markdown_text
        scorer_names = list(self.by_scorer)
        lines = [f"# {self.title.capitalize()}", "", f"**Pass rate {self.pass_rate:.0%}** over {_runs(len(self.runs))} ({self.repeats} per case).", ""]
        lines.append("| case | pass rate | " + " | ".join(scorer_names) + " | tokens | cost | latency |")
        lines.append("|---" * (len(scorer_names) + 5) + "|")
        for s in self.cases:
            lines.append(
                f"| {text(s.case_id)} | {s.pass_rate:.0%} | " + " | ".join(_scorer_cell(s, n) for n in scorer_names)
                + f" | {s.input_tokens + s.output_tokens} | {_money(s.cost)} | {s.mean_latency * 1000:.0f} ms |"
            )
        failures = self.not_passed()
        if failures:
            lines += ["", "## Not passed", ""]
            for r, why in failures:
                lines.append(f"- {text(r.case_id)} run {r.repeat}: {r.status} — {text(why)}")
                if r.output:
                    lines += ["", bandoneon.markdown_code(r.output.strip()), ""]
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        """One self-contained page (inline CSS, nothing fetched): the scorecard, then each run
        that did not pass with why and what it answered. Readable on a phone."""
        e = html.escape
        scorer_names = list(self.by_scorer)
        head = "".join(f"<th>{e(h)}</th>" for h in ["case", "pass rate", *scorer_names, "tokens", "cost", "latency"])
        body = []
        for s in self.cases:
            verdict = "pass" if s.pass_rate == 1 else "fail" if s.pass_rate == 0 else "mixed"
            cells = [s.case_id, f"{s.pass_rate:.0%}", *[_scorer_cell(s, n) for n in scorer_names], str(s.input_tokens + s.output_tokens), _money(s.cost), f"{s.mean_latency * 1000:.0f} ms"]
            body.append(f"<tr class='{verdict}'>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>")
        failures = []
        for r, why in self.not_passed():
            answer = f"<blockquote>{e(r.output.strip())}</blockquote>" if r.output.strip() else "<p class='none'>(no answer)</p>"
            failures.append(f"<li><b>{e(r.case_id)}</b> run {r.repeat}: {e(r.status)} — {e(why)}{answer}</li>")
        t = self.totals
        not_passed = f"<section class='not-passed'><h2>Not passed</h2><ul>{''.join(failures)}</ul></section>" if failures else ""
        return (
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{e(self.title)}</title><style>{_CSS}</style></head><body>"
            f"<header><h1>{e(self.title.capitalize())}</h1><p><b>Pass rate {self.pass_rate:.0%}</b> over {_runs(t['runs'])} "
            f"({self.repeats} per case): {t['passed']} passed, {t['failed']} failed, {t['errored']} errored.</p></header>"
            f"<div class='scroll'><table class='cases'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
            f"{not_passed}</body></html>"
        )


_CSS = (
    "body{font:14px system-ui,sans-serif;margin:1.5em;color:#111}h1{font-size:20px}h2{font-size:16px;margin-top:1.5em}"
    ".scroll{overflow-x:auto}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;white-space:nowrap}"
    "tr.pass{background:#dcfce7}tr.fail{background:#fee2e2}tr.mixed{background:#fef9c3}"
    ".not-passed li{margin:.6em 0;overflow-wrap:anywhere}blockquote{margin:.3em 0 0 0;padding:.3em .8em;border-left:3px solid #dc2626;"
    "background:#fafafa;white-space:pre-wrap}.none{color:#777;margin:.3em 0}"
    "@media (max-width:700px){body{margin:.8em}}"
)


def _runs(count: int) -> str:
    return f"{count} run{'s' if count != 1 else ''}"


def _scorer_cell(summary: CaseSummary, name: str) -> str:
    scores = [s for r in summary.runs for s in r.scores if s.scorer == name]
    if not scores:
        return "-"
    if any(s.error for s in scores):
        return "error"
    return f"{sum(s.passed for s in scores)}/{len(scores)}"


def _money(cost: float | None) -> str:
    return "-" if cost is None else f"${cost:.4f}"


class ReportError(ValueError):
    """A report file cannot be read."""


def load_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A JSON report (``Report.write_json``), checked for what ``compare`` reads: a ``ReportError``
    naming the file for anything else, never a raw error from the middle of a comparison."""
    try:
        data = bandoneon.loads_bounded(Path(path).read_bytes())  # a hostile file may nest without end
    except FileNotFoundError:
        raise ReportError(f"{path}: no such report") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:  # not JSON, not UTF-8, past the limits
        raise ReportError(f"{path}: not a JSON report ({str(exc)[:200]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise ReportError(f"{path}: not an eval report (no 'cases' list); write one with `bandoneon eval run ... --json FILE`")
    for number, case in enumerate(data["cases"], 1):
        if not isinstance(case, dict) or not isinstance(case.get("id"), str) or not _is_rate(case.get("pass_rate")):
            raise ReportError(f"{path}: case #{number} is not an object with an 'id' and a 'pass_rate' from 0 to 1")
    totals = data.get("totals", {})
    if not isinstance(totals, dict) or not (totals.get("pass_rate") is None or _is_rate(totals["pass_rate"])):
        raise ReportError(f"{path}: 'totals' is not an object whose 'pass_rate' is from 0 to 1")
    return data


def _is_rate(value: Any) -> bool:
    return type(value) in (int, float) and 0 <= value <= 1  # NaN compares False


@attrs.frozen
class Regression:
    case_id: str
    before: float | None
    after: float | None

    def __str__(self) -> str:
        if self.after is None:
            return f"{self.case_id}: missing from the new report (was {self.before:.0%})"
        if self.before is None:
            return f"{self.case_id}: new case at {self.after:.0%}"
        return f"{self.case_id}: {self.before:.0%} -> {self.after:.0%}"


def compare(before: dict[str, Any], after: dict[str, Any]) -> tuple[list[Regression], list[Regression]]:
    """(regressed, improved) cases between two JSON reports, by pass rate per case.
    A case that disappeared counts as regressed."""
    old = {c["id"]: float(c["pass_rate"]) for c in before["cases"]}
    new = {c["id"]: float(c["pass_rate"]) for c in after["cases"]}
    regressed = [Regression(i, old[i], new.get(i)) for i in old if i not in new or new[i] < old[i]]
    improved = [Regression(i, old.get(i), new[i]) for i in new if i in old and new[i] > old[i]]
    return regressed, improved
