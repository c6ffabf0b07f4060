"""One run's life, the same for the tool loop, the simple path and plan mode.

A run starts (``task_started``), works until something stops it, has its workspace checked,
and ends with one Result (``task_finished``). What stops it is always one of three things,
turned into a termination reason in one place (``Run.drive``): a ``StopRun`` (a final answer,
a guardrail, a failed step), a ``ModelError`` (the server cannot serve the run), or a
cancellation (``Session.cancel``, Ctrl-C).
The run's state (``RunState``: its start, tokens, iterations) lives here, so every mode's clock
starts at ``start``; the guardrails check it through ``Limits``.

The loops keep what is theirs: how to ask the model, what a step is, what goes into their
Result. They call ``start`` and ``drive``, and hand back an ``Outcome``: what happened, not yet
checked nor announced. Whoever runs the loop finishes it (``localhand.session.finish``: the
checks, the schema answer, the conversation kept, the follow-up task, the stop hooks and the
announcement, in one place); the loop knows none of those.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from localhand.cancel import Cancellation
from localhand.errors import (
    Cancelled,
    ModelError,
    ModelTimeout,
    StopRun,
    WallClockTimeout,
    WorkspaceGone,
)
from localhand.events import (
    Event,
    EventBus,
    Guardrail,
    TaskStarted,
    Verification,
)
from localhand.events import Warning as WarningEvent
from localhand.evidence.checkguard import CheckGuard, changed_warning
from localhand.evidence.verify import Check, run_checks
from localhand.run.guardrails import Limits, RunState
from localhand.types import CheckResult

if TYPE_CHECKING:
    from localhand.models.base import ChatModel
    from localhand.types import Message

CANCELLED = "cancelled"


class Finished(Protocol):
    """What a run ends with: run mode's ``Result`` or plan mode's ``PlanResult``."""

    @property
    def status(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=Finished)


@dataclass(frozen=True, slots=True)
class Ending:
    """Why a run stopped: its termination reason, what stopped it in words, and the model
    error when that was it."""

    reason: str
    message: str = ""
    error: str | None = None
    stop: StopRun | None = None

    @property
    def guardrail(self) -> str | None:
        """The guardrail that tripped, when one did."""
        return self.stop.guardrail if self.stop is not None else None


@dataclass(slots=True)
class Outcome(Generic[R]):
    """What a loop hands back once its run stopped: the run (its bus, its workspace, its
    checks and their guard) and the loop's Result of it once the checks have run (``settle``,
    the loop's own grading, which knows how the run ended). Nothing is checked or announced
    yet: that is the finish's (``localhand.session.finish``), whichever door ran the loop."""

    life: Run
    settle: Callable[[list[CheckResult]], R]
    """The Result of the run, given what its checks found (and the loop's last evidence:
    what changed, its git diff); called once."""
    messages: Sequence[Message] = ()
    """The conversation as the model saw it, to keep for ``--continue`` (none for a plan)."""
    model: ChatModel | None = None
    """The model that ran, to ask for the answer as JSON (``--output-schema``)."""


class Run:
    """The start, the state, the events and the end of one run (see the module docstring)."""

    def __init__(
        self,
        task_id: str,
        workspace: Path,
        limits: Limits,
        bus: EventBus,
        *,
        checks: Sequence[Check] = (),
        cancellation: Cancellation | None = None,
    ) -> None:
        self.task_id = task_id
        self.workspace = workspace
        self.limits = limits
        self.bus = bus
        self.checks = list(checks)
        self.guard: CheckGuard | None = None
        """Runs the checks against their own files as they were before the run, when the run
        changed them (set by the tool loop, which takes the workspace's starting point)."""
        self.state = RunState()
        self.description = ""
        """The task's text, as ``start`` was given it."""
        self.cancellation = cancellation or Cancellation()
        """The run's cancel switch (``localhand.cancel``): whoever holds it can stop it."""

    # -- start ------------------------------------------------------------------------------

    def start(
        self,
        description: str,
        model: str,
        *,
        max_iterations: int,
        routing: dict[str, Any] | None = None,
    ) -> None:
        """The clock starts now; ``task_started`` says what runs."""
        self.state.started = time.monotonic()
        self.description = description
        self.emit(
            TaskStarted(
                task_id=self.task_id,
                description=description,
                model=model,
                workspace=str(self.workspace),
                max_iterations=max_iterations,
                routing=routing,
            )
        )

    # -- the clock ----------------------------------------------------------------------------

    def remaining_s(self) -> float | None:
        """Seconds left on the wall clock, or ``None`` when the run has none."""
        return self.limits.remaining_s(self.state)

    @contextmanager
    def deadline_stops(self) -> Iterator[None]:
        """A model request that the backend's watchdog cut off at the task's deadline is the
        wall clock's stop (``timeout``), not a server error."""
        try:
            yield
        except ModelTimeout as exc:
            left = self.remaining_s()
            if left is not None and left <= 1:
                raise WallClockTimeout(str(exc), guardrail="wall_clock") from exc
            raise

    def duration_s(self) -> float:
        return round(time.monotonic() - self.state.started, 3)

    # -- stopping ---------------------------------------------------------------------------

    def check_workspace(self) -> None:
        """Raise ``WorkspaceGone`` if the workspace was removed while the run went on."""
        if not self.workspace.is_dir():
            raise WorkspaceGone(
                f"the workspace {self.workspace} was removed during the run; restore it or run "
                "the task again in a folder that exists"
            )

    def check_cancelled(self) -> None:
        """Raise ``Cancelled`` if someone asked the run to stop (the loops call it between
        steps, tool calls and streamed chunks)."""
        self.cancellation.check()

    def drive(
        self,
        work: Callable[[], object],
        *,
        done: str,
        iteration: Callable[[], int],
        cancelled: str = "",
    ) -> Ending:
        """Run ``work`` until it returns (the reason is then ``done``) or something stops it.

        A tripped guardrail is announced as a ``guardrail`` event at ``iteration()``."""
        try:
            self.check_cancelled()  # cancelled before it began: nothing runs
            with self.cancellation.in_force():  # Stop also ends a command in flight
                work()
        except Cancelled as stop:
            return Ending(CANCELLED, str(stop) or cancelled)
        except StopRun as stop:
            if stop.guardrail:
                self.emit(
                    Guardrail(
                        task_id=self.task_id,
                        guardrail=stop.guardrail,
                        reason=str(stop),
                        iteration=iteration(),
                    )
                )
            error = str(stop) if stop.reason == "error" else None
            return Ending(stop.reason, str(stop), error=error, stop=stop)
        except ModelError as exc:
            return Ending("error", str(exc), error=str(exc))
        except KeyboardInterrupt:  # Ctrl-C in a blocking call; the handler set the switch
            return Ending(CANCELLED, self.cancellation.reason or cancelled)
        return Ending(done)

    # -- the end ----------------------------------------------------------------------------

    def verify(self) -> list[CheckResult]:
        """Run the task's checks on the workspace as it is now (with their own files as they
        were before the run, see ``localhand.evidence.checkguard``); announce their results."""
        changed: list[str] = []
        if not self.workspace.is_dir():  # removed mid-run (``WorkspaceGone``): nothing to check
            return []
        if self.guard is None:
            results = run_checks(self.checks, self.workspace)
        else:
            results, changed = self.guard.run(self.checks)
        if changed:
            self.warn(changed_warning(changed, results))
        if results:
            self.emit(
                Verification(task_id=self.task_id, checks=[asdict(result) for result in results])
            )
        return results

    # -- events -----------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        self.bus.emit(event)

    def warn(self, message: str) -> None:
        """Backends' and loops' warnings (truncated prompts, retries) into the event stream."""
        self.emit(WarningEvent(task_id=self.task_id, message=message))
