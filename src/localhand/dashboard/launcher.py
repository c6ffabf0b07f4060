"""Starting a task from the dashboard: the real runner, in a background thread.

The run's bus feeds the store's recorder; the WebSockets read the store, so a page sees the
run exactly as ``localhand show`` would, live or later. Commands that need approval wait for
the page's answer (see ``approvals``), since there is no terminal to ask on.

A page-started task gets no shortcut: its workspace must be inside a configured root (see
``workspaces``), its verify commands are classified and, when the approval policy says so,
approved on the page before it starts (see ``verify_gate``), and it then goes through
``run_task`` with the server's settings like any ``localhand run`` (a plan-mode request through
``run_plan``, like ``localhand plan --goal``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from localhand.config import Settings
from localhand.dashboard.approvals import PageApprovals, PageApprover
from localhand.dashboard.verify_gate import VerifyCommand, ask_for_verify, classify_verify
from localhand.dashboard.workspaces import resolve_workspace
from localhand.errors import ConfigError
from localhand.events import EventBus, TaskFinished
from localhand.run.task import Task
from localhand.run.verify import CommandCheck
from localhand.safety.approval import check_policy
from localhand.store import Store
from localhand.types import Result, TerminationReason


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
        verify = classify_verify(request.verify, workspace, check_policy(settings.approve))
        task = Task(
            description=description,
            workspace=workspace,
            tier=request.tier,
            agentic=request.agentic,
            max_iterations=request.max_iterations,
            checks=tuple(CommandCheck(item.command) for item in verify),
            mode=request.mode,
        )
        run_id = self.store.begin_run(task, model=settings.model)
        approver = self.approvals.approver(run_id)
        thread = threading.Thread(
            target=self._run,
            args=(task, settings, approver, verify),
            name=f"localhand-run-{run_id}",
            daemon=True,
        )
        self.threads[run_id] = thread
        thread.start()
        return run_id

    def _run(
        self,
        task: Task,
        settings: Settings,
        approver: PageApprover,
        verify: Sequence[VerifyCommand] = (),
    ) -> None:
        from localhand.run.plans import run_any

        bus = EventBus()
        bus.subscribe(self.store.recorder())
        try:
            refused = ask_for_verify(verify, approver, bus, task.id)
            if refused is not None:
                _finish(bus, task, settings, refused, reason="cancelled")
                return
            run_any(task, settings, bus=bus, approver=approver)
        except Exception as exc:  # the page must see the run end, whatever went wrong
            message = str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
            _finish(bus, task, settings, message, reason="error")

    def join(self, timeout: float | None = None) -> None:
        """Wait for the runs started so far (for tests and orderly shutdown)."""
        for thread in list(self.threads.values()):
            thread.join(timeout)


def _finish(
    bus: EventBus, task: Task, settings: Settings, message: str, *, reason: TerminationReason
) -> None:
    """End a run that never reached (or crashed in) ``run_task`` with an error Result."""
    result = Result(
        task_id=task.id,
        status="error",
        output="",
        model_used=settings.model,
        tokens_in=0,
        tokens_out=0,
        termination_reason=reason,
        iterations_used=0,
        error=message,
    )
    bus.emit(TaskFinished(task_id=task.id, result=result.to_dict()))
