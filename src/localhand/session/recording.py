"""Recording one run: the run store, and with ``--serve`` a live view of it.

The session (``localhand.session.door``) opens it for every way in. What shows the run live is
handed in (``serve``: the command line passes the dashboard's ``start_dashboard``), so that the
session needs nothing of the dashboard."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from localhand.cancel import forget_request, request_file
from localhand.store import Store, open_store_or_none
from localhand.store.recorder import close_unfinished
from localhand.types import Result

if TYPE_CHECKING:
    from rich.console import Console

    from localhand.cancel import Cancellation
    from localhand.config.settings import Settings
    from localhand.events import EventBus
    from localhand.run.task import Task


class LiveView(Protocol):
    """What ``serve`` starts: a server that shows the store at ``url`` until ``stop``."""

    @property
    def url(self) -> str: ...

    def stop(self) -> None: ...


Serve = Callable[["Store", "Settings | None"], LiveView]
"""Starts a live view of the store (the command line's ``--serve``: the dashboard)."""


class RunRecording:
    """Record one ``localhand run`` in the store and, with ``serve``, show it live.

        with RunRecording(task, bus, settings=settings, serve=start_dashboard):
            result = run_task(task, settings, bus=bus)

    A store that cannot be opened is a warning, not a failed run (``serve`` then uses an
    in-memory one). A run that never got to its Result (bad configuration, Ctrl-C before the
    loop) is closed with a failed one that says why (``store.recorder.close_unfinished``). The
    live view stops a moment after the run, once the page has its last events. With a
    ``cancellation``, a cancel request for the store's run (``localhand.cancel.request_cancel``)
    stops the run.
    """

    LINGER_S = 1.5

    def __init__(
        self,
        task: Task,
        bus: EventBus,
        *,
        settings: Settings | None = None,
        serve: Serve | None = None,
        db: Path | None = None,
        cancellation: Cancellation | None = None,
    ) -> None:
        self.task = task
        self.bus = bus
        self.settings = settings
        self.model = task.model or (settings.model if settings else "")
        self.serve = serve
        self.db = db
        self.cancellation = cancellation
        self.store: Store | None = None
        self.run_id: str | None = None
        self.server: LiveView | None = None

    def __enter__(self) -> RunRecording:
        self.store = open_store_or_none(self.db, _not_recording)
        if self.store is None:
            if not self.serve:
                return self
            self.store = Store(":memory:")
        self.run_id = self.store.begin_run(self.task, model=self.model)
        secrets = bool(self.settings and self.settings.archive_secrets)
        self.bus.subscribe(self.store.recorder(archive_secrets=secrets))
        if self.cancellation is not None:  # a Stop from another process
            self.cancellation.watch(request_file(self.run_id))
        if self.serve:
            try:
                self.server = self.serve(self.store, self.settings)
            except BaseException as exc:
                self.__exit__(type(exc), exc, None)  # close the run we opened
                raise
            stderr().print(f"watch it live: [bold]{self.server.url}#/runs/{self.run_id}[/]")
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        if self.store is None or self.run_id is None:
            return
        if self.cancellation is not None:
            forget_request(self.run_id)
        close_unfinished(self.store, self.run_id, self._failed(exc))
        if self.server is not None:
            if exc is None:
                time.sleep(self.LINGER_S)
            self.server.stop()

    def _failed(self, exc: BaseException | None) -> dict[str, Any] | None:
        """The Result of a run that an exception (Ctrl-C, bad input) ended before its own."""
        if isinstance(exc, KeyboardInterrupt):
            why = self.cancellation.reason if self.cancellation else ""
            why = why or "cancelled by the user (Ctrl-C)"
            return Result.failed(self.task.id, why, model=self.model, reason="cancelled").to_dict()
        return Result.failed(self.task.id, str(exc), model=self.model).to_dict() if exc else None


def _not_recording(why: str) -> None:
    from rich.markup import escape  # rich loads only when used

    stderr().print(f"[yellow]warning:[/] not recording this run: {escape(why)}")


@cache
def stderr() -> Console:
    """Standard error, through Rich (imported when something is first printed): where the
    command line and the recording speak to the person at the terminal (the run itself speaks
    through its events). Here rather than in ``cli`` so that ``run/`` needs nothing of it."""
    from rich.console import Console  # rich loads only when used

    return Console(stderr=True, highlight=False, soft_wrap=True)
