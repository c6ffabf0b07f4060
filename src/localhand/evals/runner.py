"""``run_eval``: a suite against models, through ``localhand batch``, to a report.

    outcome = run_eval(load_suite(), settings, EvalOptions(models=["qwen3:8b"], repeat=3))
    outcome.report["models"][0]["rates"]["pass"]      # {"k", "n", "rate", "low", "high"}

Every run is a batch task (``localhand.evals.matrix``), so an eval gets what a batch has: the
endpoint pool (each server runs as many tasks as it has slots; a task stays on its server, so
the prompt cache stays warm), failover, Ray, and resume: the batch state lives in the report
folder, and the same command run again skips the runs that finished. Each run's events come
from the run store, where the batch recorded them, and make its figures
(``localhand.evals.measure``); the report goes to ``report.json`` and ``report.html``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand._version import __version__
from localhand.config.settings import Settings
from localhand.errors import ConfigError
from localhand.evals.html import render_html
from localhand.evals.matrix import Cell, cells, eval_tag, staged
from localhand.evals.measure import run_figures
from localhand.evals.report import REPORT_HTML, REPORT_JSON, build_report, write_json
from localhand.evals.suites import Suite
from localhand.store import open_store_or_none

if TYPE_CHECKING:
    from rich.console import Console

    from localhand.batch.progress import Row
    from localhand.store import Store

STATE_FILE = "batch.state"
"""The batch's resume state, in the report folder."""


@dataclass
class EvalOptions:
    """What to run and where; ``None`` means the default."""

    models: list[str]
    repeat: int = 1
    """Runs of each task by each model: the confidence intervals narrow with more."""
    out: Path = field(default_factory=lambda: Path("localhand-eval"))
    """The report folder: ``report.json``, ``report.html`` and the resume state."""
    hosts: list[str] | None = None
    """Model servers (``--host``), replacing ``[pool]`` from localhand.toml."""
    slots: int | None = None
    concurrency: int | None = None
    executor: str = "local"
    ray_address: str | None = None
    fresh: bool = False
    """Forget the runs an earlier eval into the same folder finished; run them all again."""
    db: Path | None = None
    """The run store (default: ``LOCALHAND_DB`` or the data directory)."""


@dataclass
class EvalOutcome:
    report: dict[str, Any]
    json_path: Path
    html_path: Path


def run_eval(
    suite: Suite,
    settings: Settings,
    options: EvalOptions,
    *,
    console: Console | None = None,
    live: bool | None = None,
) -> EvalOutcome:
    """Run every task of ``suite`` ``options.repeat`` times with each model, and write the
    report. ``ConfigError`` before anything runs when the options, the pool or a model are
    wrong (a model no server has, no server that answers)."""
    from localhand.batch.driver import BatchOptions, run_batch  # loads rich: only when needed

    models = _check(options)
    out = options.out.expanduser().resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot make the report folder {out}: {exc}; pass --out DIR") from None
    runs = cells(suite, models, options.repeat, eval_tag(out))
    batch = BatchOptions(
        concurrency=options.concurrency,
        executor=options.executor,
        hosts=options.hosts,
        slots=options.slots,
        state=out / STATE_FILE,
        fresh=options.fresh,
        db=options.db,
        ray_address=options.ray_address,
    )
    started = time.time()
    with staged(suite, runs) as tasks_file:
        done = run_batch(tasks_file, settings, batch, console=console, live=live)
    rows = {row.task_id: row for row in done.rows}
    records = _records(runs, rows, options.db)
    meta = {
        "created": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds"),
        "localhand": __version__,
        "elapsed_s": round(done.elapsed_s, 3),
        "resumed": sum(1 for row in done.rows if row.skipped),
        "settings": _settings_summary(settings, options),
    }
    report = build_report(suite=suite.summary(), models=models, runs=records, meta=meta)
    json_path = write_json(report, out / REPORT_JSON)

    html_path = out / REPORT_HTML
    html_path.write_text(render_html(report), encoding="utf-8")
    return EvalOutcome(report, json_path, html_path)


def _check(options: EvalOptions) -> list[str]:
    if options.repeat < 1:
        raise ConfigError("--repeat must be at least 1")
    models = list(dict.fromkeys(m.strip() for m in options.models if m.strip()))
    if not models:
        raise ConfigError("name at least one model: --model NAME (repeatable)")
    return models


def _records(runs: list[Cell], rows: dict[str, Row], db: Path | None) -> list[dict[str, Any]]:
    """Each run's report entry: where it ran, and its figures from its Result and events."""
    store = open_store_or_none(db, lambda why: None)  # the batch said why: Results alone
    records = []
    try:
        for cell in runs:
            row = rows.get(cell.id)
            if row is None:  # the batch stopped before it (it never does without raising)
                continue
            run_id, events = _events(store, cell.id)
            records.append(
                {
                    "id": cell.id,
                    "run_id": run_id,
                    "model": cell.model,
                    "task": cell.task.id,
                    "tier": cell.task.tier,
                    "kind": cell.task.kind,
                    "repeat": cell.repeat,
                    "where": row.where,
                    **run_figures(row.result, events, plan=cell.task.is_plan),
                }
            )
    finally:
        if store is not None:
            store.close()
    return records


def _events(store: Store | None, task_id: str) -> tuple[str | None, list[dict[str, Any]] | None]:
    """The newest run of ``task_id`` in the store and its events (None: not recorded)."""
    if store is None:
        return None, None
    found = store.runs(limit=1, task_id=task_id)
    if not found:
        return None, None
    return found[0].id, [event.data for event in store.events(found[0].id)]


def _settings_summary(settings: Settings, options: EvalOptions) -> dict[str, Any]:
    """What the numbers depend on besides the model, so that a reader (and ``--compare``)
    can tell two evals apart."""
    return {
        "repeat": options.repeat,
        "backend": settings.backend,
        "tool_mode": settings.tool_mode,
        "hosts": options.hosts or ([settings.host] if settings.host else []),
        "executor": options.executor,
        "concurrency": options.concurrency,
        "watch_replies": settings.watch_replies,
        "max_reply_tokens": settings.max_reply_tokens,
        "think": settings.think,
        "num_ctx_max": settings.num_ctx_max,
        "sandbox": settings.sandbox,
    }
