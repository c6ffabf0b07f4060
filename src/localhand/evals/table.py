"""The report and the comparison as terminal tables (Rich): outcomes, then costs and
behaviour, one line per model; the full figures are in the JSON and the HTML page."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from rich.markup import escape
from rich.table import Table

from localhand.evals.charts import LABELS, pct, seconds, status_rate
from localhand.evals.report import STATUSES

WRAPS = "GUARDRAIL STOPS"
"""With the first (the model), the column that gives way on a narrow terminal (or in a pipe,
80 columns): the figures keep their width."""


def _table(*columns: str) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for i, name in enumerate(columns):
        gives = i == 0 or name == WRAPS
        table.add_column(
            name,
            justify="left" if gives else "right",
            no_wrap=not gives,
            overflow="fold" if gives else "ellipsis",
            min_width=len(name) if not gives else None,
            max_width=24 if i == 0 else None,
        )
    return table


def _num(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _rate(rate: dict[str, Any]) -> str:
    return f"{pct(rate['rate'])} [dim]{pct(rate['low'])}–{pct(rate['high'])}[/]"


Column = tuple[str, Callable[[dict[str, Any]], str]]
OUTCOMES: tuple[Column, ...] = (
    ("RUNS", lambda m: str(m["runs"])),
    ("PASS (95% CI)", lambda m: _rate(m["rates"]["pass"])),
    *((LABELS[status].upper(), partial(status_rate, status)) for status in STATUSES[1:]),
    ("PASSES ON", lambda m: _pass_evidence(m.get("pass_evidence"))),
)
"""The outcome table's columns after the model's (the pass rate per tier follows them)."""
COSTS: tuple[Column, ...] = (
    ("ITER", lambda m: _num(m["median_iterations"], 1)),
    ("TOKENS", lambda m: _num(m["tokens"]["median_per_run"])),
    ("TIME", lambda m: seconds(m["wall_s"]["median_per_run"])),
    ("TTFT", lambda m: seconds(m["ttft_s"]["median"])),
    ("NUDGES", lambda m: str(m["nudges"]["total"])),
    ("CONSTR", lambda m: str(m["constrained"]["total"])),
    ("REUSE (EST.)", lambda m: pct(m["prefix_reuse"]["share"])),
    ("CACHE HIT", lambda m: _cache_hit(m.get("server_cache"))),  # a report from before it: unknown
    ("DRAFTS OK", lambda m: pct((m.get("server_cache") or {}).get("draft_acceptance"))),
    (WRAPS, lambda m: escape(", ".join(f"{k} {n}" for k, n in m["guardrails"].items()) or "none")),
)
"""The cost and behaviour table's columns after the model's."""


def report_tables(report: dict[str, Any]) -> list[Any]:
    """What ``localhand eval`` prints: outcomes per model (with the pass rate per tier), then
    what the runs cost and how the model behaved."""
    models = report["models"]
    tiers = sorted({t for m in models for t in m["tiers"]}, key=int)
    outcomes = _table("MODEL", *(name for name, _ in OUTCOMES), *(f"TIER {t}" for t in tiers))
    costs = _table("MODEL", *(name for name, _ in COSTS))
    for m in models:
        name = escape(m["model"])
        by_tier = (pct(m["tiers"][t]["pass"]["rate"]) if t in m["tiers"] else "–" for t in tiers)
        outcomes.add_row(name, *(cell(m) for _, cell in OUTCOMES), *by_tier)
        costs.add_row(name, *(cell(m) for _, cell in COSTS))
    return [outcomes, "", costs]


def compare_tables(diff: dict[str, Any]) -> list[Any]:
    """What ``localhand eval --compare`` prints: per pair of models, each figure before and
    after, and the tasks whose outcome changed."""
    parts: list[Any] = []
    if not diff["same_suite"]:
        parts.append(
            f"[yellow]note:[/] the suites differ; comparing the {len(diff['common_tasks'])} "
            "tasks both ran"
        )
    for key, (before, after) in diff["settings_changed"].items():
        parts.append(f"[yellow]note:[/] {escape(key)} changed: {before} → {after}")
    for side in ("a", "b"):
        for model in diff["unpaired"][side]:
            parts.append(f"[yellow]note:[/] {escape(model)} is only in report {side.upper()}")
    for pair in diff["pairs"]:
        title = (
            pair["a_model"]
            if pair["a_model"] == pair["b_model"]
            else (f"{pair['a_model']} → {pair['b_model']}")
        )
        table = _table(escape(title), "A", "B", "CHANGE")
        for status, rate in pair["rates"].items():
            mark = " [bold]*[/]" if rate["significant"] else ""
            table.add_row(
                status,
                _rate(rate["a"]),
                _rate(rate["b"]),
                f"{rate['diff'] * 100:+.0f} pts [dim]{rate['low'] * 100:+.0f}…"
                f"{rate['high'] * 100:+.0f}[/]{mark}",
            )
        for name, fig in pair["figures"].items():
            table.add_row(
                name.replace("_", " "),
                _fig(fig["a"]),
                _fig(fig["b"]),
                "–" if fig["change"] is None else f"{fig['change']:+,.4g}",
            )
        for kind, (before, after) in pair["guardrails"].items():
            table.add_row(
                f"guardrail {escape(kind)}", str(before), str(after), f"{after - before:+d}"
            )
        parts += ["", table]
        for flip in pair["tasks"]:
            arrow = "[green]better[/]" if flip["better"] else "[red]worse[/]"
            parts.append(
                f"  {escape(flip['task'])}: {flip['a'][0]}/{flip['a'][1]} → "
                f"{flip['b'][0]}/{flip['b'][1]} passed ({arrow})"
            )
    parts.append("[dim]* the 95% interval of the change leaves out zero[/]")
    return parts


def _pass_evidence(counts: dict[str, int] | None) -> str:
    """What a model's passes rested on: ``3 report · 1 exit code`` (a report from before: –)."""
    if not counts:
        return "–"
    words = {"report": "report", "exit_code": "exit code", "None": "no command"}
    return " · ".join(f"{n} {words.get(kind, kind)}" for kind, n in sorted(counts.items()))


def _fig(value: float | None) -> str:
    return "–" if value is None else f"{value:,.4g}"


def _cache_hit(cache: dict[str, Any] | None) -> str:
    """The share of prompt tokens the servers said they reused; "unknown" where none said."""
    share = (cache or {}).get("share")
    return "unknown" if share is None else pct(share)
