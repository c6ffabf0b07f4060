"""The one door into a run: every way in (the command line's ``run`` and ``plan``, ``localhand
mcp``, the dashboard, batch, the library's ``run_task`` and ``run_plan``) builds a task and a
``Session``, and the session does, once and in this order, what every run needs before its
loop: the workspace check; the trust of the workspace's own files (``config.distrusting``);
the cancel switch; the verify commands that came from elsewhere than the user's command line,
through the risk check and the approval policy (``verify_gate``); the sandbox; the model; and
then the tool loop, the simple path (``runner``) or plan mode (``plans``), whose outcome comes
back to be finished in one place (``finish``: the checks, the schema answer, the conversation
kept, the follow-up task, the stop hooks, the announcement). Approvals are
announced on the run's timeline (``safety.approval.announce``); recording in the store, and
the live view, are the session's too (``recording``), and so are the run's traces when
OpenTelemetry tracing is on (``localhand.telemetry``).

A run that never started (bad input the door cannot refuse as an error of its own, a refused
verify command, a cancellation before its loop) ends with ``Result.failed`` (a plan's
``PlanResult.failed``), emitted as the run's ``task_finished`` like any Result, so the store,
the dashboard and the caller see one shape from every door. One that bad input (a
``ConfigError``) or Ctrl-C ends by an exception, before it has a Result, keeps the same
Result in its store (``recording``): ``localhand show`` says why it ended.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.cancel import Cancellation
from localhand.config.settings import Settings, distrusting
from localhand.errors import ConfigError, LocalhandError
from localhand.events import EventBus, TaskFinished, Warning
from localhand.evidence.project_checks import with_detected_checks
from localhand.plugins.entry_points import distrust_under
from localhand.run.lifecycle import Outcome
from localhand.run.task import Task
from localhand.safety.approval.announce import AnnouncedApprover
from localhand.safety.approval.approver import (
    Approver,
    DenyAll,
    PlainApprover,
    check_policy,
    declared_approver,
)
from localhand.session.finish import finish
from localhand.session.prepared import Prepared
from localhand.session.recording import RunRecording, Serve
from localhand.session.runner import checkpoint_hook, run_loop, sandbox_of
from localhand.session.verify_gate import STEP_ID, NotApproved, gate_checks
from localhand.telemetry import traced_run
from localhand.types import Result

if TYPE_CHECKING:
    from localhand.evidence.verify import Check
    from localhand.models.base import ChatModel
    from localhand.plan.result import PlanResult
    from localhand.session.continuing import Continuation
    from localhand.session.plans import PlanRequest
    from localhand.session.prepared import ToolWrapper
    from localhand.store import Store


class Session:
    """One run, whichever door it came in by (see the module docstring).

    ``approver`` answers what the approval policy asks (default: refuse, nobody is there);
    ``own_checks`` are the checks the user typed on the command line (``--verify``), which are
    theirs to run; every other command check is gated. ``store``: a store the door has
    already opened the run in (the dashboard); else ``recording`` opens one.
    """

    def __init__(
        self,
        task: Task,
        settings: Settings,
        *,
        bus: EventBus | None = None,
        approver: Approver | PlainApprover | None = None,
        model: ChatModel | None = None,
        store: Store | None = None,
        follow_up_dir: Path | None = None,
        own_checks: tuple[Check, ...] = (),
        plan: PlanRequest | None = None,
        continuing: Continuation | None = None,
        output_schema: dict[str, Any] | None = None,
        wrap_tools: ToolWrapper | None = None,
        cancellation: Cancellation | None = None,
    ) -> None:
        self.task = task
        self.settings = settings
        self.bus = bus or EventBus()
        self.approver: Approver = declared_approver(approver) if approver else DenyAll()
        self.model = model
        self._store = store
        self.follow_up_dir = follow_up_dir
        self.own_checks = own_checks
        self.continuing = continuing
        """The earlier run this one carries on (``localhand.session.continuing``)."""
        self.output_schema = output_schema if output_schema is not None else task.output_schema
        """``--output-schema`` (else the task's own): the final answer as JSON
        (``localhand.session.structured``)."""
        self.plan = plan if plan is not None or not task.is_plan else _plan_of_task(task)
        self.cancellation = cancellation or Cancellation()
        """The run's cancel switch: ``cancel`` flips it, the loop stops at its next check. A
        door gives its own when a part it makes first must see it (the terminal's approver,
        whose question a cancel ends)."""
        self._recording: RunRecording | None = None
        self.wrap_tools = wrap_tools
        """What a door puts around the run's tools (the editor's: each call shown, reads
        through its buffers); ``None``: the tools as they are."""

    # -- the door's parts -------------------------------------------------------------------

    def recording(self, *, db: Path | None = None, serve: Serve | None = None) -> RunRecording:
        """Record the run in the store (``db``, else the default one) while the block runs; a
        cancel request for its run id (``localhand.cancel.request_cancel``) stops it."""
        self._recording = RunRecording(
            self.task,
            self.bus,
            settings=self.settings,
            serve=serve,
            db=db,
            cancellation=self.cancellation,
        )
        return self._recording

    @property
    def store(self) -> Store | None:
        """The store the run is recorded in, when it is."""
        if self._store is None and self._recording is not None:
            return self._recording.store
        return self._store

    def cancel(self, reason: str = "cancelled by the user") -> None:
        """Stop the run at its next check, from any thread; it ends ``cancelled``."""
        self.cancellation.cancel(reason)

    @contextmanager
    def cancel_on_sigint(self) -> Iterator[None]:
        """Ctrl-C cancels the run: the switch is flipped (so every later check stops it) and a
        ``KeyboardInterrupt`` cuts short the blocking call in progress (a model request)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def interrupted(signum: int, frame: Any) -> None:
            self.cancel("cancelled by the user (Ctrl-C)")
            raise KeyboardInterrupt

        previous = signal.signal(signal.SIGINT, interrupted)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def warn(self, message: str) -> None:
        self.bus.emit(Warning(task_id=self.task.id, message=message))

    # -- the run ------------------------------------------------------------------------------

    def run(self) -> Result | PlanResult:
        """The prologue, once, then the run to its Result, traced (``localhand.telemetry``)
        when tracing is on. Bad input is a ``ConfigError``; anything the model or a command
        does ends up in the Result. A run that an exception ends (bad input, Ctrl-C) before it
        has a Result keeps why in its ``recording``."""
        with traced_run(self.task, self.settings, self.bus, self.warn):
            return self._started()

    def _started(self) -> Result | PlanResult:
        task = self.task
        if not task.workspace.is_dir():
            raise ConfigError(
                f"workspace {task.workspace} is not a directory; create it or pass --workspace DIR"
            )
        if self.plan is not None and self.output_schema is not None:
            raise ConfigError(
                "--output-schema is for a task the model carries out: a plan's answer is "
                "localhand's summary of its steps; drop the schema or run the task without a plan"
            )
        # Before any tool or profile is looked up: a plugin the model could have installed
        # into the workspace (its .venv) is never loaded into this process.
        distrust_under(task.workspace)
        # ``--verify auto``: the command the project tests with, before the gate judges it
        task = with_detected_checks(task)
        settings = self.settings.with_overrides(model=task.model, backend=task.backend)
        settings, distrusted = distrusting(settings, task.workspace)
        for message in distrusted:
            self.warn(message)
        if self.cancellation.requested:
            return self.failed(self.cancellation.reason, reason="cancelled")
        try:
            task = task.with_changes(checks=self._gated(task, settings)) if task.checks else task
        except NotApproved as refused:
            return self.failed(str(refused), reason="cancelled")
        ready = Prepared(
            task,
            settings,
            self.bus,
            self.approver,
            self.announced(),
            self.cancellation,
            model=self.model,
            store=self.store,
            follow_up_dir=self.follow_up_dir,
            continuing=self.continuing,
            output_schema=self.output_schema,
            wrap_tools=self.wrap_tools,
        )
        with sandbox_of(settings, self.warn):  # the finish too: its hooks run boxed
            if self.plan is None:
                return finish(run_loop(ready), ready)
            from localhand.session.plans import run_plan_mode  # plan mode only

            planned = run_plan_mode(ready, self.plan)
            if isinstance(planned, Outcome):
                return finish(planned, ready)
            # a plan that never ran (its draft failed or was not approved) is announced as any
            # Result is: the store, the dashboard, --jsonl and the editor say why it ended
            self.bus.emit(TaskFinished(task_id=task.id, result=planned.to_dict()))
            return planned

    def outcome(self) -> Result | PlanResult:
        """``run``, for a door with nobody to hand an exception to (the dashboard, the editor):
        a run that cannot start ends with its failed Result instead, announced as its
        ``task_finished``."""
        try:
            return self.run()
        except (LocalhandError, OSError) as exc:
            return self.failed(str(exc))
        except Exception as exc:  # whoever watches must see the run end, whatever went wrong
            return self.failed(f"{type(exc).__name__}: {exc}")

    def failed(self, message: str, *, reason: str = "error") -> Result | PlanResult:
        """The Result of a run that never started, announced as its ``task_finished``."""
        model = self.task.model or self.settings.model
        result: Result | PlanResult
        if self.plan is not None:
            from localhand.plan.result import PlanResult  # off the first request's path

            mode = self.task.mode or ""
            result = PlanResult.failed(
                self.task.id, message, goal=self.task.description, mode=mode, reason=reason
            )
        else:
            result = Result.failed(self.task.id, message, model=model, reason=reason)  # type: ignore[arg-type]
        self.bus.emit(TaskFinished(task_id=self.task.id, result=result.to_dict()))
        return result

    def announced(self, step_id: str = "run_command") -> AnnouncedApprover:
        """The approver, with each request and answer on the run's timeline."""
        return AnnouncedApprover(self.approver, self.bus, self.task.id, step_id=step_id)

    def _gated(self, task: Task, settings: Settings) -> tuple[Check, ...]:
        return gate_checks(
            task.checks,
            own=self.own_checks,
            workspace=task.workspace,
            policy=check_policy(settings.approve),
            approver=self.announced(STEP_ID),
            checkpoint=checkpoint_hook(task, self.store),
        )


def _plan_of_task(task: Task) -> PlanRequest:
    """A plan task's request: its plan file (or plan data), else one drafted for it."""
    from localhand.session.plans import PlanRequest  # plan mode only

    return PlanRequest(plan=Path(task.plan) if isinstance(task.plan, str) else task.plan)
