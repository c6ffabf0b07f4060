"""``localhand batch``: load the tasks, skip what is done, run the rest, record every Result.

    report = run_batch("tasks.jsonl", load_settings(), BatchOptions(concurrency=4))
    report.exit_code      # 0 all pass, 1 some partial_pass/fail, 2 some error, 3 unverified

Each Result goes, as it comes, to the state file (resume), the run store (with the task's
events), the progress view and ``on_result`` (the CLI prints it for ``--json``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from localhand.batch.endpoints import pool_endpoints
from localhand.batch.local import run_local
from localhand.batch.pool import EndpointPool
from localhand.batch.progress import BatchProgress, Row
from localhand.batch.ray_executor import run_on_ray
from localhand.batch.run_one import TaskOutcome
from localhand.batch.runbook import RunBook
from localhand.batch.slots import slot_warning
from localhand.batch.state import BatchState, stale_state, state_path
from localhand.batch.tasks import BatchTask, load_batch, with_output_schema
from localhand.batch.workspace import default_root
from localhand.config.settings import Settings
from localhand.errors import ConfigError
from localhand.events import Event, EventBus
from localhand.store import open_store_or_none

if TYPE_CHECKING:
    from localhand.store import Store

EXECUTORS = ("local", "ray")


@dataclass
class BatchOptions:
    """How to run a batch; ``None`` means the default."""

    concurrency: int | None = None
    """Tasks at once (local: threads; default the pool's slots, and more than the slots wait
    for one, with a warning). Ray: tasks submitted at once."""
    executor: str = "local"
    hosts: list[str] | None = None
    """Endpoints (``--host``), replacing ``[pool]`` from localhand.toml."""
    slots: int | None = None
    """Slots of each ``--host`` endpoint."""
    state: Path | None = None
    """The resume state (default: in localhand's data directory, ``batch.state.state_path``)."""
    fresh: bool = False
    """Forget earlier results and run every task."""
    workdir: Path | None = None
    """Where task workspaces are made (default: a folder in the temp directory)."""
    keep_workspaces: bool = False
    db: Path | None = None
    """The run store (default: ``LOCALHAND_DB`` or the data directory)."""
    ray_address: str | None = None
    """Ray cluster to join (default: ``RAY_ADDRESS``, else the one started on this machine)."""
    ray_max_retries: int = 2
    """Times Ray reruns a task whose worker or node died."""
    watch: Callable[[Store | None], Callable[[Event], None]] | None = None
    """What else sees every event, given the batch's store (``--jsonl``'s stream)."""
    output_schema: dict[str, Any] | None = None
    """``--output-schema``: the JSON schema the final answer of every task the model carries
    out must follow (a task's own ``output_schema`` wins); plan tasks are left without."""


@dataclass
class BatchReport:
    rows: list[Row] = field(default_factory=list)
    elapsed_s: float = 0.0
    state_path: Path | None = None

    @property
    def exit_code(self) -> int:
        """The worst outcome's code: 2 some error, 1 some partial_pass or fail, 3 some
        unverified (the rest passed), 0 every task passed."""
        statuses = {str(row.result.get("status")) for row in self.rows}
        if statuses - {"pass", "partial_pass", "fail", "unverified"}:
            return 2
        if statuses & {"partial_pass", "fail"}:
            return 1
        return 3 if "unverified" in statuses else 0


def run_batch(
    tasks_file: str | Path,
    settings: Settings,
    options: BatchOptions | None = None,
    *,
    console: Console | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    live: bool | None = None,
) -> BatchReport:
    """Run a batch file to the end (see the module docstring). ``ConfigError`` before any task
    runs when the file, the pool or the options are wrong."""
    options = options or BatchOptions()
    if options.executor not in EXECUTORS:
        raise ConfigError(f"--executor must be one of {', '.join(EXECUTORS)}")
    if options.concurrency is not None and options.concurrency < 1:
        raise ConfigError("--concurrency must be at least 1")
    path = Path(tasks_file)
    items, plans = with_output_schema(load_batch(path), options.output_schema)
    _check_backends(items, settings)
    console = console or Console(stderr=True, highlight=False)
    if plans:
        names = ", ".join(item.id for item in plans)
        console.print(
            f"[yellow]note:[/] --output-schema is not for plan tasks (a plan's answer is "
            f"localhand's summary of its steps): {escape(names)} run without it"
        )
    on_result = on_result or (lambda result: None)
    kept = options.state or state_path(path)
    if options.state is None and (stale := stale_state(path, kept)) is not None:
        console.print(f"[yellow]warning:[/] {escape(stale)}")
    report = BatchReport(state_path=kept)
    with BatchState(kept, fresh=options.fresh) as state:
        rows: dict[str, Row] = {}
        todo = []
        for item in items:
            earlier = state.finished(item)
            if earlier is None:
                todo.append(item)
            else:
                where = " → ".join(earlier.get("where") or [])
                rows[item.id] = Row(item.id, earlier["result"], where, "finished before", True)
                on_result(earlier["result"])
        started = time.monotonic()
        if todo:
            for item, outcome, where in _execute(todo, settings, options, path, console, live):
                state.record(item, outcome.result, where=outcome.where, ref=outcome.changes_ref)
                rows[item.id] = Row(item.id, outcome.result, where, _note(outcome))
                on_result(outcome.result)
        report.elapsed_s = time.monotonic() - started
        report.rows = [rows[item.id] for item in items if item.id in rows]
    return report


def _execute(
    todo: list[BatchTask],
    settings: Settings,
    options: BatchOptions,
    path: Path,
    console: Console,
    live: bool | None,
) -> Iterator[tuple[BatchTask, TaskOutcome, str]]:
    root = options.workdir or default_root(path)
    pool = None
    if options.executor == "local":
        models = {item.task.model or settings.model for item in todo}
        pool = _ready_pool(settings, options, models, console)
    bus = EventBus()
    store = open_store_or_none(
        options.db,
        lambda why: console.print(f"[yellow]warning:[/] not recording this batch: {escape(why)}"),
    )
    book = RunBook(store, bus, {item.id: item.task for item in todo})
    bus.subscribe(book)
    if store is not None:  # local tasks book their calls themselves (and check the budget)
        bus.subscribe(store.recorder(ledger=pool is None))
    progress = BatchProgress(len(todo), console, live=live)
    bus.subscribe(progress)
    if options.watch is not None:
        bus.subscribe(options.watch(store))
    if pool is None:
        outcomes = run_on_ray(
            todo,
            settings=settings,
            bus=bus,
            root=root,
            keep=options.keep_workspaces,
            address=options.ray_address,
            max_retries=options.ray_max_retries,
            concurrency=options.concurrency,
            on_node=progress.where,
        )
    else:
        outcomes = run_local(
            todo,
            pool=pool,
            settings=settings,
            bus=bus,
            root=root,
            concurrency=options.concurrency or pool.total_slots(),
            keep=options.keep_workspaces,
            store=store,
            on_endpoint=lambda task_id, endpoint: progress.where(task_id, endpoint.url),
        )
    try:
        with progress:
            for item, outcome in outcomes:
                book.close(item.id, outcome.result)
                where = " → ".join(outcome.where)
                progress.finished(Row(item.id, outcome.result, where))
                yield item, outcome, where
    finally:
        if store is not None:
            store.close()
        with contextlib.suppress(OSError):  # only when empty: kept workspaces stay
            root.rmdir()


def _ready_pool(
    settings: Settings, options: BatchOptions, models: set[str], console: Console
) -> EndpointPool:
    """The pool, its endpoints asked what they serve (and their slots); says so when the
    batch asked for more tasks at once than they have slots."""
    pool = EndpointPool(pool_endpoints(settings, options.hosts, options.slots))
    pool.discover()
    status = pool.status()
    if not any(s.alive for s in status):
        why = "\n".join(f"  {s.url}: {s.why}" for s in status)
        raise ConfigError(
            f"no endpoint of the pool answers:\n{why}\nStart the servers (`ollama serve`) or "
            "point localhand at them with --host URL or [pool] in localhand.toml."
        )
    pool.check_serves(models)
    warning = slot_warning(options.concurrency, status)
    if warning is not None:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    return pool


def _check_backends(items: list[BatchTask], settings: Settings) -> None:
    for item in items:
        if (item.task.backend or settings.backend) == "embedded":
            raise ConfigError(
                f"task {item.id!r} (line {item.line}) asks for the embedded backend: a batch runs "
                "on model servers (ollama, openai); use `localhand run` for the embedded model"
            )


def _note(outcome: TaskOutcome) -> str:
    if outcome.workspace:
        return f"kept {outcome.workspace}"
    if outcome.changes_ref:
        return f"changes in {outcome.changes_ref}"
    return ""
