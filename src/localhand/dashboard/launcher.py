"""Starting a task from the dashboard: the real runner, in a background thread.

The run's bus feeds the store's recorder; the WebSockets read the store, so a page sees the
run exactly as ``localhand show`` would, live or later. Commands that need approval wait for
the page's answer (see ``approvals``), since there is no terminal to ask on.

A page-started task gets no shortcut: its workspace must be inside a configured root (see
``workspaces``), and it goes through the same door as any ``localhand run``
(``localhand.session.door.Session``, with the server's settings): its verify commands are
classified and, when the approval policy says so, approved on the page before it starts
(``localhand.session.verify_gate``). The page's Stop calls ``cancel``: a run started here
stops through its session, one started elsewhere (``localhand run --serve`` in a terminal)
through a cancel request file (``localhand.cancel``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from localhand.cancel import request_cancel
from localhand.config.settings import Settings
from localhand.dashboard.approvals import PageApprovals
from localhand.dashboard.workspaces import resolve_workspace
from localhand.errors import ConfigError
from localhand.events import EventBus
from localhand.evidence.verify import CommandCheck
from localhand.run.task import Task
from localhand.session.door import Session
from localhand.store import Store
from localhand.store.recorder import close_unfinished


class StartRequest(BaseModel):
    """What the page's "Start a task" form sends."""

    model_config = ConfigDict(extra="forbid")

    description: str = Field(min_length=1, max_length=20_000)
    workspace: str = Field(min_length=1, max_length=4096)
    model: str | None = Field(default=None, max_length=200)
    tier: Literal["trivial", "standard", "complex"] = "standard"
    max_iterations: int | None = Field(default=None, ge=1, le=500)
    verify: list[Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=list, max_length=20
    )
    agentic: bool | None = None
    """None: localhand decides from the description (see ``routing``)."""
    mode: Literal["teacher", "planner", "agentic"] | None = None
    """Plan mode: the model drafts a plan for the description and it runs in this mode
    (dangerous steps, and every step in teacher mode, are approved on the page)."""


class Launcher:
    """Runs tasks for the dashboard, one thread each, in workspaces under ``roots``."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        approvals: PageApprovals | None = None,
        roots: Sequence[Path] = (),
    ) -> None:
        self.store = store
        self.settings = settings
        self.approvals = approvals or PageApprovals()
        self.roots = tuple(roots) or (Path.cwd().resolve(),)
        self.threads: dict[str, threading.Thread] = {}
        self.sessions: dict[str, Session] = {}

    def start(self, request: StartRequest) -> str:
        """Check the request, open the run and start it; return the run id. Raises
        ``ConfigError`` (the page shows it) for a workspace outside the roots, and the like."""
        workspace = resolve_workspace(request.workspace, self.roots)
        description = request.description.strip()
        if not description:
            raise ConfigError("describe the task")
        settings = self.settings.with_overrides(model=(request.model or "").strip() or None)
        if request.mode is not None and request.verify:
            raise ConfigError(
                "a plan runs its own steps: leave the checks empty in plan mode, or run a task"
            )
        commands = [command.strip() for command in request.verify if command.strip()]
        task = Task(
            description=description,
            workspace=workspace,
            tier=request.tier,
            agentic=request.agentic,
            max_iterations=request.max_iterations,
            checks=tuple(CommandCheck(command) for command in commands),
            mode=request.mode,
        )
        run_id = self.store.begin_run(task, model=settings.model)
        bus = EventBus()
        bus.subscribe(self.store.recorder())
        session = Session(
            task, settings, bus=bus, approver=self.approvals.approver(run_id), store=self.store
        )
        thread = threading.Thread(
            target=self._run,
            args=(session, run_id),
            name=f"localhand-run-{run_id}",
            daemon=True,
        )
        self.sessions[run_id] = session
        self.threads[run_id] = thread
        thread.start()
        return run_id

    def _run(self, session: Session, run_id: str) -> None:
        """A run's thread. ``outcome`` records a Result however the run ends (a run that cannot
        start ends as failed); should anything still leave it open, it is closed as an error
        here, so that no badge says "running" for a run that is over."""
        try:
            session.outcome()
        finally:
            close_unfinished(self.store, run_id)

    def cancel(self, run_id: str) -> None:
        """The page's Stop: the run ends ``cancelled`` at its next check, with its partial
        Result recorded. A run this server did not start (``localhand run --serve`` in
        another process) is asked through a cancel request file."""
        session = self.sessions.get(run_id)
        if session is not None:
            session.cancel("stopped on the dashboard")
            self.approvals.withdraw(run_id)  # a run waiting for an answer stops now, refused
        else:
            request_cancel(run_id)
