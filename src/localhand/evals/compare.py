"""``localhand eval --compare A B``: what changed between two reports (a new localhand, another
quantisation, another server).

Models are paired by name; two reports of one model each are paired whatever their names
(``qwen3:8b-q4_K_M`` against ``qwen3:8b-q8_0`` is the usual question). Only the tasks both
reports ran are compared: each side's figures are computed again from its runs of those
tasks, so a report of tier 1 compares fairly with a report of the whole suite. A change of
pass rate is ``significant`` when the 95% interval of the difference (Newcombe's, from the two
Wilson intervals) leaves out zero.
"""

from __future__ import annotations

from typing import Any

from localhand.evals.report import STATUSES, model_summary
from localhand.evals.stats import Rate, difference

FIGURES: dict[str, tuple[str, str]] = {
    "median_iterations": ("median_iterations", ""),
    "median_tokens": ("tokens", "median_per_run"),
    "median_wall_s": ("wall_s", "median_per_run"),
    "median_ttft_s": ("ttft_s", "median"),
    "tokens_out_per_s": ("tokens", "out_per_s"),
    "nudges_per_request": ("nudges", "per_request"),
    "constrained_per_request": ("constrained", "per_request"),
    "prefix_reuse": ("prefix_reuse", "share"),
}
"""The figures compared besides the rates: name → where it is in a model's summary."""

SETTINGS_COMPARED = (
    "backend",
    "tool_mode",
    "hosts",
    "watch_replies",
    "max_reply_tokens",
    "think",
    "num_ctx_max",
    "sandbox",
    "repeat",
)


def compare_reports(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The differences from report ``a`` to report ``b``."""
    tasks_a = {t["id"] for t in a["suite"]["tasks"]}
    tasks_b = {t["id"] for t in b["suite"]["tasks"]}
    common = tasks_a & tasks_b
    pairs, unpaired = _pairs([m["model"] for m in a["models"]], [m["model"] for m in b["models"]])
    settings_a, settings_b = a.get("settings") or {}, b.get("settings") or {}
    return {
        "a": _about(a),
        "b": _about(b),
        "same_suite": a["suite"].get("digest") == b["suite"].get("digest"),
        "common_tasks": sorted(common),
        "only_in_a": sorted(tasks_a - common),
        "only_in_b": sorted(tasks_b - common),
        "settings_changed": {
            key: [settings_a.get(key), settings_b.get(key)]
            for key in SETTINGS_COMPARED
            if settings_a.get(key) != settings_b.get(key)
        },
        "pairs": [_pair(a, b, model_a, model_b, common) for model_a, model_b in pairs],
        "unpaired": unpaired,
    }


def _about(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "created": report.get("created"),
        "localhand": report.get("localhand"),
        "suite": report["suite"].get("name"),
        "digest": report["suite"].get("digest"),
        "models": [m["model"] for m in report["models"]],
    }


def _pairs(a: list[str], b: list[str]) -> tuple[list[tuple[str, str]], dict[str, list[str]]]:
    if len(a) == 1 and len(b) == 1:
        return [(a[0], b[0])], {"a": [], "b": []}
    pairs = [(model, model) for model in a if model in b]
    return pairs, {"a": [m for m in a if m not in b], "b": [m for m in b if m not in a]}


def _pair(
    a: dict[str, Any], b: dict[str, Any], model_a: str, model_b: str, common: set[str]
) -> dict[str, Any]:
    runs_a = [r for r in a["runs"] if r["model"] == model_a and r["task"] in common]
    runs_b = [r for r in b["runs"] if r["model"] == model_b and r["task"] in common]
    before, after = model_summary(model_a, runs_a), model_summary(model_b, runs_b)
    rates = {}
    for status in STATUSES:
        ra, rb = before["rates"][status], after["rates"][status]
        rates[status] = {"a": ra, "b": rb, **difference(Rate(**ra), Rate(**rb)).to_dict()}
    figures = {}
    for name, (key, sub) in FIGURES.items():
        va = before[key][sub] if sub else before[key]
        vb = after[key][sub] if sub else after[key]
        change = None if va is None or vb is None else round(vb - va, 4)
        figures[name] = {"a": va, "b": vb, "change": change}
    kinds = sorted(set(before["guardrails"]) | set(after["guardrails"]))
    return {
        "a_model": model_a,
        "b_model": model_b,
        "runs": [before["runs"], after["runs"]],
        "rates": rates,
        "figures": figures,
        "guardrails": {
            k: [before["guardrails"].get(k, 0), after["guardrails"].get(k, 0)] for k in kinds
        },
        "tasks": _flips(runs_a, runs_b),
    }


def _flips(runs_a: list[dict[str, Any]], runs_b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tasks whose share of passing runs changed."""
    flips = []
    for task in sorted({r["task"] for r in runs_a} | {r["task"] for r in runs_b}):
        a, b = _passes(runs_a, task), _passes(runs_b, task)
        share_a, share_b = (passed / runs if runs else None for passed, runs in (a, b))
        if share_a != share_b:
            better = share_a is not None and share_b is not None and share_b > share_a
            flips.append({"task": task, "a": a, "b": b, "better": better})
    return flips


def _passes(runs: list[dict[str, Any]], task: str) -> list[int]:
    """How many of the runs of ``task`` passed, and how many there were."""
    mine = [r for r in runs if r["task"] == task]
    return [sum(1 for r in mine if r["status"] == "pass"), len(mine)]
