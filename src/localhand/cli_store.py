"""Commands over the run store: ``runs``, ``show RUN``, ``replay RUN``, ``serve``.

Wiring only; ``register(app)`` adds them to the main command line. Each takes ``--db`` (default:
``LOCALHAND_DB`` or the user's data directory, see ``localhand.store.default_db_path``).
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from localhand.errors import ConfigError

if TYPE_CHECKING:  # the store, Rich and the rest load when a command runs (fast start-up)
    from rich.console import Console

    from localhand.config import Settings
    from localhand.dashboard import DashboardServer
    from localhand.events import EventBus
    from localhand.store import RunInfo, Store, StoredEvent
    from localhand.task import Task

DbOption = Annotated[
    Path | None,
    typer.Option("--db", help="Run store (default: LOCALHAND_DB or the user data directory)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
STATUS_COLOURS = {
    "pass": "green", "partial_pass": "yellow", "running": "blue", "interrupted": "magenta"
}
NUMERIC = ("ITER", "TOKENS", "DURATION")


def register(app: typer.Typer) -> None:
    """Add ``runs``, ``show``, ``replay`` and ``serve`` to ``app``."""
    app.command("runs")(runs)
    app.command("show")(show)
    app.command("replay")(replay)
    app.command("serve")(serve)


def runs(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many runs.")] = 20,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """List recorded runs, newest first: status, reason, iterations, tokens, duration."""
    store = _open(db)
    found = store.runs(limit)
    if json_output:
        _print_json([_without_result(info.to_dict()) for info in found])
        return
    from rich.markup import escape
    from rich.table import Table

    out = _console()
    if not found:
        out.print(f"no runs recorded yet in {store.path}")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in ("RUN", "STARTED", "STATUS", "REASON", "ITER", "TOKENS", "DURATION", "TASK"):
        table.add_column(
            name,
            justify="right" if name in NUMERIC else "left",
            no_wrap=name != "TASK",
            overflow="ellipsis",
        )
    for info in found:
        task = info.description if len(info.description) <= 50 else info.description[:49] + "…"
        table.add_row(
            info.id + (" ↻" if info.kind == "replay" else ""),
            datetime.fromtimestamp(info.started_at).strftime("%m-%d %H:%M"),
            _status(info.status),
            info.termination_reason or "",
            str(info.iterations),
            f"{info.tokens_in + info.tokens_out:,}",
            _duration(info.duration_s),
            escape(task),
        )
    out.print(table)


def show(
    run: Annotated[str, typer.Argument(help="Run id, a unique prefix of it, or 'last'.")],
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Print a run's timeline: tool calls, nudges, stops, verification and the Result."""
    store = _open(db)
    info = _resolve(store, run)
    events = store.events(info.id)
    if json_output:
        _print_json({"run": info.to_dict(), "events": [e.to_dict() for e in events]})
        return
    from localhand.view import TimelineView

    out = _console(soft_wrap=True)
    started = datetime.fromtimestamp(info.started_at).strftime("%Y-%m-%d %H:%M:%S")
    replay = f" · replay of {info.replay_of}" if info.replay_of else ""
    out.print(f"[bold]run {info.id}[/] · {_status(info.status)} · {started}{replay}")
    view = TimelineView(out)
    for event in events:
        view(_Recorded(event))
    if info.status == "interrupted":
        out.print(
            f"[bold magenta]■ interrupted[/]: the process ended after {len(events)} events, "
            "before the run finished"
        )
    elif info.status == "running":
        out.print("[blue]… still running[/]")
    output = (info.result or {}).get("output") or ""
    if output:
        sys.stdout.write(output.rstrip() + "\n")


def replay(
    run: Annotated[str, typer.Argument(help="Run id, a unique prefix of it, or 'last'.")],
    workspace: Annotated[
        Path | None,
        typer.Option(help="Start from a copy of DIR (default: the workspace kept with the run)."),
    ] = None,
    keep: Annotated[bool, typer.Option(help="Keep the replay's workspace and print it.")] = False,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Re-run a recorded run's model replies through the current loop and report differences.

    Exit code 0 when the replay did the same as the recording, 1 when it differs."""
    from localhand.replay import replay_run

    store = _open(db)
    try:
        report = replay_run(store, run, workspace=workspace, keep=keep)
    except ConfigError as exc:
        _fail(str(exc))
    if json_output:
        _print_json(report.to_dict())
        raise typer.Exit(0 if report.ok else 1)
    from rich.markup import escape

    out = _console(soft_wrap=True)
    out.print(
        f"replayed run {report.run_id}: {report.replies_used} of {report.replies_recorded} "
        f"recorded replies, in a {report.workspace_source} (recorded as run {report.replay_run_id})"
    )
    for note in report.notes:
        out.print(f"[yellow]! {escape(note)}[/]")
    if keep:
        out.print(f"workspace kept at {report.workspace}")
    if report.ok:
        out.print(f"[bold green]✓ same timeline and result[/] ({report.result.status})")
        raise typer.Exit(0)
    out.print(f"[bold red]✗ {len(report.differences)} difference(s)[/]")
    for diff in report.differences:
        out.print(f"  step {diff.index + 1}:")
        out.print(f"    [red]- recorded: {escape(diff.recorded or '(nothing)')}[/]")
        out.print(f"    [green]+ replayed: {escape(diff.replayed or '(nothing)')}[/]")
    raise typer.Exit(1)


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free one).")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(envvar="LOCALHAND_TOKEN", help="Require this token (16+ characters)."),
    ] = None,
    allow_remote: Annotated[
        bool,
        typer.Option("--allow-remote", help="Allow a non-loopback --host (a token is required)."),
    ] = False,
    model: Annotated[str | None, typer.Option(help="Default model for tasks started.")] = None,
    db: DbOption = None,
) -> None:
    """Serve the dashboard: runs, live timelines, plans, and a form to start tasks."""
    from localhand.config import load_settings

    try:
        from localhand.dashboard import start_dashboard
    except ImportError as exc:
        _fail(f"the dashboard needs FastAPI and uvicorn ({exc.name} is missing): "
              "pip install 'localhand[dashboard]'")
    store = _open(db)
    try:
        settings = load_settings().with_overrides(model=model)
        server = start_dashboard(
            store, host=host, port=port, token=token, allow_remote=allow_remote,
            settings=settings, background=False,
        )
    except ConfigError as exc:
        _fail(str(exc))
    _console(stderr=True).print(
        f"localhand dashboard on [bold]{server.url}[/] (store {store.path}); Ctrl-C stops it"
    )
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn stops cleanly, then re-raises it
        server.serve_forever()


class RunRecording:
    """Record one ``localhand run`` in the store and, with ``serve``, show it live.

        with RunRecording(task, bus, settings=settings, serve=serve):
            result = run_task(task, settings, bus=bus)

    A store that cannot be opened is a warning, not a failed run (``serve`` then uses an
    in-memory one). A run that never got to its Result (bad configuration, Ctrl-C before the
    loop) is closed with an error instead of staying "running". The dashboard stops a moment
    after the run, once the page has its last events.
    """

    LINGER_S = 1.5

    def __init__(
        self,
        task: Task,
        bus: EventBus,
        *,
        settings: Settings | None = None,
        serve: bool = False,
        port: int = 8765,
        db: Path | None = None,
    ) -> None:
        self.task = task
        self.bus = bus
        self.settings = settings
        self.serve = serve
        self.port = port
        self.db = db
        self.store: Store | None = None
        self.run_id: str | None = None
        self.server: DashboardServer | None = None

    def __enter__(self) -> RunRecording:
        from localhand.store import Store, open_store

        if self.serve:
            try:
                from localhand.dashboard import start_dashboard
            except ImportError as exc:
                raise ConfigError(
                    f"--serve needs FastAPI and uvicorn ({exc.name} is missing): "
                    "pip install 'localhand[dashboard]'"
                ) from None
        try:
            self.store = open_store(self.db)
        except ConfigError as exc:
            from rich.markup import escape

            _console(stderr=True).print(
                f"[yellow]warning:[/] not recording this run: {escape(str(exc))}"
            )
            if not self.serve:
                return self
            self.store = Store(":memory:")
        model = self.task.model or (self.settings.model if self.settings else "")
        self.run_id = self.store.begin_run(self.task, model=model)
        self.bus.subscribe(self.store.recorder())
        if self.serve:
            try:
                self.server = start_dashboard(
                    self.store, port=self.port, settings=self.settings, port_fallback=True
                )
            except BaseException as exc:
                self.__exit__(type(exc), exc, None)  # close the run we opened
                raise
            _console(stderr=True).print(
                f"watch it live: [bold]{self.server.url}#/runs/{self.run_id}[/]"
            )
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        if self.store is None or self.run_id is None:
            return
        if self.store.run(self.run_id).status == "running":  # no task_finished was recorded
            cancelled = isinstance(exc, KeyboardInterrupt)
            self.store.finish_run(self.run_id, {
                "status": "error",
                "termination_reason": "cancelled" if cancelled else "error",
                "error": str(exc) if exc else "the run ended without a result",
            })
        if self.server is not None:
            if exc is None:
                time.sleep(self.LINGER_S)
            self.server.stop()


class _Recorded:
    """A stored event with the two things the terminal view asks of an Event."""

    def __init__(self, event: StoredEvent) -> None:
        self.type = event.type
        self._data = event.data

    def to_dict(self) -> dict[str, Any]:
        return self._data


def _open(db: Path | None) -> Store:
    from localhand.store import open_store

    try:
        return open_store(db)
    except ConfigError as exc:
        _fail(str(exc))


def _resolve(store: Store, ref: str) -> RunInfo:
    try:
        return store.run(ref)
    except ConfigError as exc:
        _fail(str(exc))


def _console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=soft_wrap)


def _fail(message: str) -> NoReturn:
    from rich.markup import escape

    _console(stderr=True).print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(2)


def _status(status: str) -> str:
    colour = STATUS_COLOURS.get(status, "red")
    return f"[{colour}]{status}[/]"


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def _without_result(run: dict[str, Any]) -> dict[str, Any]:
    run.pop("result", None)
    return run


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
