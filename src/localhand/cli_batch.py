"""``localhand batch TASKS.jsonl``: wiring only (see ``localhand.batch``).

Exit code 0 when every task passed, 1 when some ended ``partial_pass`` or ``fail``, 2 when
some ended ``error`` or the batch could not start (with a message saying why), 130 on Ctrl-C
(run the same command again to resume).
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from localhand.errors import ConfigError


class Executor(StrEnum):
    local = "local"
    ray = "ray"


class PoolBackend(StrEnum):
    auto = "auto"
    ollama = "ollama"
    openai = "openai"


def register(app: typer.Typer) -> None:
    """Add ``batch`` to ``app``."""
    app.command("batch")(batch)


def batch(
    tasks: Annotated[Path, typer.Argument(help="JSONL file: one task per line, task-file fields.")],
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency", "-j", min=1,
            help="Tasks at once (default: the pool's slots; Ray: all, Ray queues them).",
        ),
    ] = None,
    executor: Annotated[
        Executor, typer.Option(help="Threads here, or Ray tasks on a Ray cluster.")
    ] = Executor.local,
    host: Annotated[
        list[str] | None,
        typer.Option(help="A model server for the pool; repeatable. Replaces the toml pool."),
    ] = None,
    slots: Annotated[
        int | None,
        typer.Option(min=1, help="Parallel slots of each --host (OLLAMA_NUM_PARALLEL; default 1)."),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Model for tasks that name none, e.g. qwen3:8b.")
    ] = None,
    backend: Annotated[
        PoolBackend | None, typer.Option(help="Server kind of --host endpoints.")
    ] = None,
    state: Annotated[
        Path | None, typer.Option(help="Resume state file (default: TASKS.jsonl.state).")
    ] = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Forget earlier results; run every task again.")
    ] = False,
    workdir: Annotated[
        Path | None, typer.Option(help="Where task workspaces are made (default: temp dir).")
    ] = None,
    keep_workspaces: Annotated[
        bool, typer.Option("--keep-workspaces", help="Keep each task's workspace afterwards.")
    ] = False,
    db: Annotated[
        Path | None,
        typer.Option("--db", help="Run store (default: LOCALHAND_DB or the user data directory)."),
    ] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster, HOST:PORT (default: RAY_ADDRESS or local).")
    ] = None,
    ray_max_retries: Annotated[
        int, typer.Option(min=0, help="Reruns of a task whose Ray worker or node died.")
    ] = 2,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print each Result as one JSON line on stdout.")
    ] = False,
) -> None:
    """Run every task of TASKS.jsonl, several at once, on a pool of model servers or on Ray.

    Run the same command again after a crash: finished tasks are skipped, the rest rerun."""
    # Batch mode (the pool, the executors, Rich) loads only for this command: fast start-up.
    from rich.console import Console
    from rich.markup import escape

    from localhand.batch.driver import BatchOptions, run_batch
    from localhand.batch.progress import summary_notes, summary_table, totals_line
    from localhand.config import load_settings

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    out = err if json_output else Console(highlight=False, soft_wrap=True)
    options = BatchOptions(
        concurrency=concurrency,
        executor=executor.value,
        hosts=host,
        slots=slots,
        state=state,
        fresh=fresh,
        workdir=workdir,
        keep_workspaces=keep_workspaces,
        db=db,
        ray_address=ray_address,
        ray_max_retries=ray_max_retries,
    )
    try:
        settings = load_settings().with_overrides(
            model=model, backend=backend.value if backend else None
        )
        report = run_batch(
            tasks, settings, options, console=err, on_result=_printer(json_output)
        )
    except ConfigError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]: run the same command again to resume the batch")
        raise typer.Exit(130) from None
    out.print(summary_table(report.rows))
    for line in summary_notes(report.rows):
        out.print(line)
    out.print(totals_line(report.rows, report.elapsed_s))
    raise typer.Exit(report.exit_code)


def _printer(enabled: bool) -> Any:
    def write(result: dict[str, Any]) -> None:
        if enabled:
            sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
            sys.stdout.flush()

    return write
