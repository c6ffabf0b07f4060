"""The report as one HTML page: the figures, the charts (``charts``), the task grid and the
report's JSON, in one file with no script to run and nothing to fetch, so it can be mailed,
attached to an issue or opened from disk. The look is the dashboard's."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from html import escape
from typing import Any

from localhand.evals import charts
from localhand.evals.charts import LABELS, pct, status_rate
from localhand.evals.report import STATUSES

STYLE = """
:root { --bg: #f5f6f8; --card: #fff; --line: #e3e6eb; --text: #1d2330; --muted: #6b7385;
  --accent: #4f46e5; --ok: #15803d; --ok-bg: #e7f6ec; --warn: #a16207; --warn-bg: #fdf5dc;
  --bad: #b91c1c; --bad-bg: #fdeaea;
  --mono: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
.topbar { display: flex; align-items: center; gap: 8px; padding: 10px 28px; background: #111827;
  color: #e5e7eb; font-weight: 700; font-size: 16px; }
.logo { width: 14px; height: 14px; border-radius: 4px; background: var(--accent); }
main { max-width: 1280px; margin: 0 auto; padding: 20px 28px 60px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
  padding: 16px 18px; margin-bottom: 16px; overflow-x: auto; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .06em; color: var(--muted);
  margin: 0 0 12px; }
.meta { color: var(--muted); margin: 0 0 16px; font-size: 13px; }
table { width: 100%; border-collapse: collapse; }
th { text-align: left; font-size: 12px; font-weight: 600; color: var(--muted); padding: 6px 8px;
  border-bottom: 1px solid var(--line); }
td { padding: 7px 8px; border-bottom: 1px solid #f0f1f4; vertical-align: top; }
.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.ci { color: var(--muted); font-size: 12px; }
.grid td.cell { text-align: center; font-family: var(--mono); font-size: 12px; border-radius: 4px; }
.charts { display: grid; grid-template-columns: 1fr; gap: 8px; }
svg.chart { max-width: 100%; height: auto; font-family: inherit; }
.notes { color: #374151; font-size: 13px; } .notes dt { font-weight: 600; margin-top: 8px; }
.notes dd { margin: 2px 0 0 0; color: var(--muted); }
code { font-family: var(--mono); font-size: 12.5px; }
"""

NOTES = (
    (
        "Pass, unverified, partial, fail, error",
        "The status of each run, as the Result gives it, except that a run whose model changed "
        "the files its checks run (check_*), or a plan's check step, counts as fail. Unverified "
        "(the model said done but the task had no check) is counted apart and never as a pass. "
        "The range is the 95% Wilson interval over every run of the model (tasks × repeats).",
    ),
    (
        "Iterations, tokens, wall time",
        "Medians per run, from the Results: model turns, prompt + reply tokens as the server "
        "counted them, seconds from start to Result.",
    ),
    (
        "Time to first token",
        "Per request, from the streamed reply's first progress event (exact to about 0.1 s); a "
        "reply shorter than a second, or not streamed, counts its whole duration, an upper bound. "
        "'exact' says how many requests were measured the first way.",
    ),
    (
        "Nudges, constrained retries",
        "Replies with neither a usable call nor an answer, met with a hint; and broken calls asked "
        "for again with the reply held to a valid call. Shown per request.",
    ),
    ("Guardrail stops", "Runs stopped by a guardrail, by kind (repetition, stall, iterations...)."),
    (
        "Prefix reuse",
        "The share of prompt tokens that repeat the previous request's prompt in the same run: "
        "what a server's prompt cache may skip. It leaves out the previous reply's tokens, what "
        "tasks share (the system prompt and tools), and whether the server really hit its cache; "
        "constrained retries and compactions count as no reuse; plan runs are left out.",
    ),
)


def render_html(report: dict[str, Any]) -> str:
    """The whole page."""
    models = report["models"]
    suite = report["suite"]
    settings = report.get("settings") or {}
    title = f"localhand eval · {suite['name']} · " + ", ".join(m["model"] for m in models)
    meta = (
        f"suite {suite['name']} ({len(suite['tasks'])} tasks, digest {suite.get('digest', '')}) · "
        f"{settings.get('repeat', 1)} repeat(s) · {report.get('created', '')} · "
        f"localhand {report.get('localhand', '')} · backend {settings.get('backend', '')}"
    )
    notes = "".join(f"<dt>{escape(t)}</dt><dd>{escape(d)}</dd>" for t, d in NOTES)
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">{escape(meta)}</p>',
        _card("Summary", _summary(models)),
        _card("Outcomes", charts.outcomes(models)),
        _card("Pass rate by tier", charts.tiers(models)),
        _card("Cost per run", _costs(models)),
        _card("Guardrail stops", charts.guardrails(models)),
        _card("Tasks", _grid(report["tasks"], [m["model"] for m in models])),
        _card("What the figures are", f'<dl class="notes">{notes}</dl>'),
    ]
    data = json.dumps(report, ensure_ascii=False).replace("</", "<\\/")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
        '<div class="topbar"><span class="logo"></span>localhand eval</div>'
        f"<main>{''.join(body)}</main>"
        f'<script type="application/json" id="eval-report">{data}</script>'
        "</body></html>\n"
    )


def _card(title: str, content: str) -> str:
    return f'<section class="card"><h2>{escape(title)}</h2>{content}</section>'


Column = tuple[str, str, Callable[[dict[str, Any]], str]]
SUMMARY: tuple[Column, ...] = (
    ("runs", "runs", lambda m: str(m["runs"])),
    *((LABELS[status], status, partial(status_rate, status)) for status in STATUSES),
    ("iterations", "median_iterations", lambda m: _num(m["median_iterations"])),
    ("tokens", "tokens", lambda m: _num(m["tokens"]["median_per_run"])),
    ("wall time", "wall_s", lambda m: charts.seconds(m["wall_s"]["median_per_run"])),
    ("time to 1st token", "ttft_s", lambda m: charts.seconds(m["ttft_s"]["median"])),
    ("nudges", "nudges", lambda m: _per(m["nudges"])),
    ("constrained", "constrained", lambda m: _per(m["constrained"])),
    ("guardrail stops", "guardrails", lambda m: str(sum(m["guardrails"].values()))),
    ("prefix reuse", "prefix_reuse", lambda m: pct(m["prefix_reuse"]["share"])),
)
"""The summary's columns after the model's: heading, ``data-field`` and the cell's text."""
UNDER: dict[str, Callable[[dict[str, Any]], str]] = {
    "pass": lambda m: f"{pct(m['rates']['pass']['low'])}–{pct(m['rates']['pass']['high'])}",
    "ttft_s": lambda m: f"{m['ttft_s']['exact']}/{m['ttft_s']['requests']} exact",
}
"""What a cell shows under its figure, small: the interval, how many were measured exactly."""


def _summary(models: list[dict[str, Any]]) -> str:
    rows = []
    for m in models:
        name = escape(m["model"])
        cells = [f"<td>{name}</td>"]
        for _, field, text in SUMMARY:
            under = UNDER.get(field)
            extra = f'<br><span class="ci">{escape(under(m))}</span>' if under else ""
            cells.append(
                f'<td class="num" data-model="{name}" data-field="{field}">'
                f"{escape(text(m))}{extra}</td>"
            )
        rows.append(f"<tr>{''.join(cells)}</tr>")
    head = "".join(f'<th class="num">{heading}</th>' for heading, _, _ in SUMMARY)
    return (
        f'<table class="summary"><thead><tr><th class="">model</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


COSTS: tuple[tuple[str, str, Callable[[dict[str, Any]], float | None], str], ...] = (
    ("tokens", "Median tokens per run", lambda m: m["tokens"]["median_per_run"], "tokens"),
    ("wall", "Median wall time per run", lambda m: m["wall_s"]["median_per_run"], "s"),
    ("ttft", "Median time to first token", lambda m: m["ttft_s"]["median"], "s"),
    ("iterations", "Median iterations per run", lambda m: m["median_iterations"], ""),
)
"""The cost charts: name, title, the figure of a model's summary, its unit."""


def _costs(models: list[dict[str, Any]]) -> str:
    drawn = "".join(
        f'<h2 style="margin-top:8px">{escape(title)}</h2>'
        + charts.metric(name, title, [(m["model"], figure(m)) for m in models], unit)
        for name, title, figure, unit in COSTS
    )
    return f'<div class="charts">{drawn}</div>'


def _grid(tasks: list[dict[str, Any]], models: list[str]) -> str:
    head = "".join(f'<th class="num">{escape(m)}</th>' for m in models)
    rows = []
    for task in tasks:
        cells = []
        for model in models:
            c = task["by_model"].get(model) or {"runs": 0}
            runs = c["runs"] or 0
            colour = _shade(c, runs)
            title = ", ".join(f"{LABELS[s]} {c.get(s, 0)}" for s in STATUSES)
            cells.append(
                f'<td class="cell" style="background:{colour}" title="{escape(title)}" '
                f'data-task="{escape(task["task"])}" data-model="{escape(model)}" '
                f'data-pass="{c.get("pass", 0)}" data-runs="{runs}">'
                f"{c.get('pass', 0)}/{runs}</td>"
            )
        rows.append(
            f'<tr><td><code>{escape(task["task"])}</code></td><td class="num">{task["tier"]}</td>'
            f"<td>{escape(task['kind'])}</td>{''.join(cells)}</tr>"
        )
    return (
        '<table class="grid"><thead><tr><th>task</th><th class="num">tier</th><th>kind</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        '<p class="meta">Each cell: runs that passed / runs. Green all passed, amber some '
        "passed or partial, red none.</p>"
    )


def _shade(counts: dict[str, Any], runs: int) -> str:
    if not runs:
        return "#eef0f3"
    if counts.get("pass", 0) == runs:
        return "#e7f6ec"
    if counts.get("pass", 0) or counts.get("partial_pass", 0):
        return "#fdf5dc"
    return "#fdeaea"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:g}"


def _per(counts: dict[str, Any]) -> str:
    per = counts.get("per_request")
    return f"{counts['total']}" + ("" if per is None else f" ({per * 100:.0f}%)")
