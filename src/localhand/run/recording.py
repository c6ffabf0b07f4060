"""Recording one run from the command line (and `localhand mcp`): the run store, and with
``--serve`` the dashboard."""

from __future__ import annotations

import time
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.errors import ConfigError

if TYPE_CHECKING:
    from rich.console import Console

    from localhand.config import Settings
    from localhand.dashboard import DashboardServer
    from localhand.events import EventBus
    from localhand.run.task import Task
    from localhand.store import Store


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

            stderr().print(f"[yellow]warning:[/] not recording this run: {escape(str(exc))}")
            if not self.serve:
                return self
            self.store = Store(":memory:")
        model = self.task.model or (self.settings.model if self.settings else "")
        self.run_id = self.store.begin_run(self.task, model=model)
        secrets = bool(self.settings and self.settings.archive_secrets)
        self.bus.subscribe(self.store.recorder(archive_secrets=secrets))
        if self.serve:
            try:
                self.server = start_dashboard(
                    self.store, port=self.port, settings=self.settings, port_fallback=True
                )
            except BaseException as exc:
                self.__exit__(type(exc), exc, None)  # close the run we opened
                raise
            stderr().print(f"watch it live: [bold]{self.server.url}#/runs/{self.run_id}[/]")
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        if self.store is None or self.run_id is None:
            return
        if self.store.run(self.run_id).status == "running":  # no task_finished was recorded
            cancelled = isinstance(exc, KeyboardInterrupt)
            self.store.finish_run(
                self.run_id,
                {
                    "status": "error",
                    "termination_reason": "cancelled" if cancelled else "error",
                    "error": str(exc) if exc else "the run ended without a result",
                },
            )
        if self.server is not None:
            if exc is None:
                time.sleep(self.LINGER_S)
            self.server.stop()


@cache
def stderr() -> Console:
    """Standard error, through Rich (imported when something is first printed): where the
    command line and the recording speak to the person at the terminal (the run itself speaks
    through its events). Here rather than in ``cli`` so that ``run/`` needs nothing of it."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)
