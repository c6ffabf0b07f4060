"""The eval report: per model, the figures of its runs; stored as JSON beside the HTML page.

    {"format": "localhand-eval/1", "created": "...", "localhand": "0.1.0",
     "suite": {"name", "digest", "tiers", "tasks": [...]}, "settings": {...},
     "models": [{"model", "runs", "counts", "rates", "tiers", "median_iterations", "tokens",
                 "wall_s", "ttft_s", "requests", "nudges", "constrained", "guardrails",
                 "stops", "prefix_reuse", "server_cache", ...}],
     "tasks": [{"task", "tier", "kind", "by_model": {model: {"runs", "pass", ...}}}],
     "runs": [{"id", "run_id", "model", "task", "tier", "repeat", "status", ...}]}

Rates are ``{"k", "n", "rate", "low", "high"}``: 95% Wilson intervals over every run of the
model (tasks × repeats); ``localhand.evals.stats`` says why, and what that leaves out.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from localhand.errors import ConfigError
from localhand.evals.stats import median, wilson

FORMAT = "localhand-eval/1"
STATUSES = ("pass", "unverified", "partial_pass", "fail", "error")
"""Every status is counted apart; only ``pass`` is a pass. ``unverified`` (a final answer with
no checks) is never one; reports written before it existed lack its count and rate."""
REPORT_JSON = "report.json"
REPORT_HTML = "report.html"


def build_report(
    *,
    suite: dict[str, Any],
    models: list[str],
    runs: list[dict[str, Any]],
    meta: dict[str, Any],
) -> dict[str, Any]:
    """The report of ``runs`` (each with ``model``, ``task`` and the figures of
    ``measure.run_figures``), for ``models`` in the order given."""
    return {
        "format": FORMAT,
        **meta,
        "suite": suite,
        "models": [
            model_summary(model, [r for r in runs if r["model"] == model]) for model in models
        ],
        "tasks": task_table(suite, models, runs),
        "runs": runs,
    }


def model_summary(model: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Every figure of one model, over its runs."""
    n = len(runs)
    counts = Counter(r["status"] for r in runs)
    measured = [r for r in runs if r.get("events")]
    loops = [r for r in measured if r.get("mode") != "plan"]
    requests = sum(r["requests"] or 0 for r in measured)
    loop_requests = sum(r["requests"] or 0 for r in loops)
    ttfts = [t for r in measured for t in r["ttft_s"]]
    firsts = [r["ttft_s"][0] for r in measured if r["ttft_s"]]
    prompt = sum(r["prompt_tokens"] or 0 for r in loops)
    reusable = sum(r["reusable_tokens"] or 0 for r in loops)
    tokens_out = sum(r["tokens_out"] for r in runs)
    reply_s = sum(r["reply_s"] or 0 for r in measured)
    guardrails: Counter[str] = Counter()
    for run in measured:
        guardrails.update(run["guardrails"])
    return {
        "model": model,
        "runs": n,
        "counts": {s: counts.get(s, 0) for s in STATUSES},
        "rates": {s: wilson(counts.get(s, 0), n).to_dict() for s in STATUSES},
        "tiers": _tiers(runs),
        "median_iterations": median(r["iterations"] for r in runs),
        "tokens": {
            "median_per_run": median(r["tokens_in"] + r["tokens_out"] for r in runs),
            "in": sum(r["tokens_in"] for r in runs),
            "out": tokens_out,
            "out_per_s": round(tokens_out / reply_s, 2) if reply_s else None,
        },
        "wall_s": {
            "median_per_run": median(r["duration_s"] for r in runs),
            "total": round(sum(r["duration_s"] for r in runs), 3),
        },
        "ttft_s": {
            "median": median(ttfts),
            "first_median": median(firsts),
            "requests": len(ttfts),
            "exact": sum(r["ttft_exact"] for r in measured),
        },
        "requests": requests,
        # The parser's troubles, per request of the tool loop (plan runs have neither).
        "nudges": _per(loops, "nudges", loop_requests),
        "constrained": _per(loops, "constrained", loop_requests),
        "guardrails": dict(sorted(guardrails.items())),
        "stops": dict(sorted(Counter(str(r["termination_reason"]) for r in runs).items())),
        "prefix_reuse": {  # an estimate from prompt lengths (``measure``)
            "share": round(reusable / prompt, 4) if prompt else None,
            "prompt_tokens": prompt,
            "reusable_tokens": reusable,
            "runs": len(loops),
            "estimate": True,
        },
        "server_cache": server_cache(runs),
        "downgraded": sum(1 for r in runs if r.get("note")),
        # what its passes rested on (``measure.run_figures``' ``evidence``); absent before
        "pass_evidence": dict(
            Counter(str(r.get("evidence")) for r in runs if r["status"] == "pass")
        ),
        "without_events": n - len(measured),
    }


def server_cache(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """What the servers said of their prefill and cache over ``runs`` (the Results'
    ``prefill``); ``share`` (reused / prompt) is None, unknown, when no request said."""
    said = [r["server_prefill"] for r in runs if r.get("server_prefill")]
    prefilled = sum(p.get("tokens_prefilled") or 0 for p in said)
    reused = sum(p.get("tokens_reused") or 0 for p in said)
    reported = sum(p.get("reported") or 0 for p in said)
    seconds = [p["prefill_s"] for p in said if p.get("prefill_s") is not None]
    drafted = sum(p.get("draft_tokens") or 0 for p in said)
    accepted = sum(p.get("draft_accepted") or 0 for p in said)
    return {
        "draft_acceptance": round(accepted / drafted, 4) if drafted else None,
        "share": round(reused / (prefilled + reused), 4)
        if reported and prefilled + reused
        else None,
        "tokens_prefilled": prefilled if reported else None,
        "tokens_reused": reused if reported else None,
        "prefill_s": round(sum(seconds), 3) if seconds else None,
        "requests": sum(p.get("requests") or 0 for p in said),
        "reported": reported,
    }


def _per(runs: list[dict[str, Any]], key: str, requests: int) -> dict[str, Any]:
    """How often something happened: in all, in how many runs, and per request."""
    total = sum(r[key] or 0 for r in runs)
    return {
        "total": total,
        "runs": sum(1 for r in runs if r[key]),
        "requests": requests,
        "per_request": round(total / requests, 4) if requests else None,
    }


def _tiers(runs: list[dict[str, Any]]) -> dict[str, Any]:
    tiers: dict[str, Any] = {}
    for tier in sorted({r["tier"] for r in runs}):
        mine = [r for r in runs if r["tier"] == tier]
        passed = sum(1 for r in mine if r["status"] == "pass")
        tiers[str(tier)] = {"runs": len(mine), "pass": wilson(passed, len(mine)).to_dict()}
    return tiers


def task_table(
    suite: dict[str, Any], models: list[str], runs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each task's outcome counts per model: which tasks a model can do, and how reliably."""
    table = []
    for task in suite["tasks"]:
        by_model = {}
        for model in models:
            mine = [r for r in runs if r["task"] == task["id"] and r["model"] == model]
            counts = Counter(r["status"] for r in mine)
            by_model[model] = {"runs": len(mine), **{s: counts.get(s, 0) for s in STATUSES}}
        table.append(
            {"task": task["id"], "tier": task["tier"], "kind": task["kind"], "by_model": by_model}
        )
    return table


def write_json(report: dict[str, Any], path: Path) -> Path:
    """Write ``report`` to ``path`` atomically (a half-written report must not be compared)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def load_report(ref: str | Path) -> dict[str, Any]:
    """A report from its JSON file, or from the folder that holds ``report.json``;
    ``ConfigError`` saying why when it is not one."""
    path = Path(ref).expanduser()
    if path.is_dir():
        path = path / REPORT_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"no eval report at {ref}: give a report.json, or the folder `localhand eval "
            "--out DIR` wrote it to"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"cannot read the eval report {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(
            f"{path} is not a localhand eval report (its format should be {FORMAT!r})"
        )
    if not isinstance(data.get("models"), list) or not isinstance(data.get("runs"), list):
        raise ConfigError(f"{path} is not a complete eval report: it lacks its models or runs")
    return data
