"""Wiring: settings and a task in, a model, the tool loop or the simple path, a Result out."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.config import Settings, distrusting
from localhand.errors import ConfigError
from localhand.events import ApprovalDecided, ApprovalNeeded, EventBus, ModelStatus, Warning
from localhand.models.base import ChatModel
from localhand.paths import data_dir
from localhand.run.agent import Agent
from localhand.run.ledger import Ledger
from localhand.run.project_checks import with_detected_checks
from localhand.run.routing import Route, route
from localhand.run.task import Task
from localhand.safety.approval import Approver, DenyAll, check_policy
from localhand.safety.risk import Risk
from localhand.tools import default_tools
from localhand.types import Result

if TYPE_CHECKING:
    from localhand.store import Store


def build_model(
    settings: Settings,
    on_warning: Callable[[str], None] | None = None,
    on_status: Callable[[str], None] | None = None,
) -> ChatModel:
    """The backend the settings ask for (``auto``: Ollama when it has the model, else the
    embedded model, else a ``ConfigError`` that says how to get one)."""
    from localhand.models.auto import select_backend

    return select_backend(settings, on_warning, on_status=on_status)


def run_task(
    task: Task,
    settings: Settings,
    *,
    bus: EventBus | None = None,
    model: ChatModel | None = None,
    follow_up_dir: Path | None = None,
    store: Store | None = None,
    approver: Approver | None = None,
) -> Result:
    """Run one task to its Result. Model errors end up in the Result, never as exceptions.

    When the task does not pass, a follow-up task file for what remains is written to
    ``follow_up_dir`` (default: ``tasks/`` in localhand's data directory). With a ``store``,
    every model call is booked in its token ledger and the daily budget is enforced.
    Commands that ``settings.approve`` says need approval go to ``approver`` (default: refuse,
    since nobody is there to ask); each request is announced as an ``approval_needed`` event.
    """
    if task.is_plan:
        raise ConfigError(
            f"task {task.id} names a plan: run it with run_plan or run_any "
            "(localhand.run.plans), as localhand plan and localhand batch do"
        )
    if not task.workspace.is_dir():
        raise ConfigError(
            f"workspace {task.workspace} is not a directory; create it or pass --workspace DIR"
        )
    task = with_detected_checks(task)  # ``--verify auto``: the command the project tests with
    settings = settings.with_overrides(model=task.model, backend=task.backend)
    bus = bus or EventBus()

    def warn(message: str) -> None:
        bus.emit(Warning(task_id=task.id, message=message))

    settings, distrusted = distrusting(settings, task.workspace)
    for message in distrusted:
        warn(message)

    def status(message: str) -> None:
        bus.emit(ModelStatus(task_id=task.id, message=message))

    def follow_up(result: Result) -> str:
        from localhand.taskfile import write_task_file  # pydantic models: load when needed

        remaining = task.with_changes(
            id=f"{task.id}-followup",
            description=follow_up_description(task, result),
        )
        return str(write_task_file(remaining, follow_up_dir or data_dir() / "tasks"))

    decision = route(task.description, task.agentic)
    with sandbox_of(settings, warn):
        model = model or build_model(settings, on_warning=warn, on_status=status)
        return _run(task, settings, model, decision, bus, store, approver, follow_up)


def sandbox_of(settings: Settings, warn: Callable[[str], None]) -> AbstractContextManager[Any]:
    """The command sandbox that ``settings`` ask for, in force for the block."""
    from localhand.safety.box_limits import configured
    from localhand.safety.sandbox import run_sandbox

    return run_sandbox(
        settings.sandbox,
        network=not settings.isolate_network,
        read=settings.sandbox_read,
        warn=warn,
        limits=configured(settings.sandbox_limits),
        network_setting=settings.sandbox_network,
        allow_hosts=settings.sandbox_allow_hosts,
    )


def _run(
    task: Task,
    settings: Settings,
    model: ChatModel,
    decision: Route,
    bus: EventBus,
    store: Store | None,
    approver: Approver | None,
    follow_up: Callable[[Result], str],
) -> Result:
    ledger = _ledger(settings, store)
    if not decision.agentic:  # one streamed answer, no tools: see localhand.run.simple
        from localhand.run.simple import run_simple

        return run_simple(
            model, task, bus=bus, routing=decision, ledger=ledger, follow_up=follow_up
        )
    tools = default_tools(
        task.workspace,
        policy=check_policy(settings.approve),
        approver=AnnouncedApprover(approver or DenyAll(), bus, task.id),
        isolate_network=settings.isolate_network,
        checkpoint=checkpoint_hook(task, store),
    )
    with ExitStack() as lifetime:
        if settings.mcp_servers:  # only then: the SDK takes half a second to import
            from localhand.mcp.tools import mcp_registry

            tools = lifetime.enter_context(  # the servers stop when the run ends
                mcp_registry(
                    tools,
                    settings.mcp_servers,
                    policy=check_policy(settings.approve),
                    approver=approver or DenyAll(),
                    bus=bus,
                    task_id=task.id,
                )
            )
        agent = Agent(
            model,
            task.workspace,
            tools=tools,
            limits=task.limits(decision.agentic),
            checks=task.checks,
            bus=bus,
            task_id=task.id,
            follow_up=follow_up,
            routing=decision,
            ledger=ledger,
            context_files=task.context_files,
        )
        return agent.run(task.description)


def checkpoint_hook(task: Task, store: Store | None) -> Callable[[str], str | None]:
    """What copies ``task``'s workspace before a dangerous command (``localhand undo RUN``
    restores it), filed under the store's run id: the run ``RUN`` names is the store's, and a
    task id can be shared by several runs (a task file run twice, a replay). Without a store,
    or before it opened the run, the copy is filed by task id and ``undo`` finds it by time."""

    def take(command: str) -> str | None:
        from localhand.safety.checkpoint import checkpoint_note  # only when one is needed

        run_id = None
        if store is not None:
            try:
                run_id = store.open_run_for(task.id)
            except Exception:  # a store that fails here must not stop the command: file by task
                run_id = None
        return checkpoint_note(task.workspace, command, task_id=task.id, run_id=run_id)

    return take


class AnnouncedApprover:
    """Emits ``approval_needed`` (with the warning a person would read) before asking, and
    ``approval_decided`` with the answer. Who answered is the inner approver's ``decided_by``
    after it answered (see ``decided_by``)."""

    def __init__(self, inner: Approver, bus: EventBus, task_id: str) -> None:
        self.inner = inner
        self.bus = bus
        self.task_id = task_id

    def approve(self, command: str, risk: Risk) -> bool:
        self.bus.emit(
            ApprovalNeeded(
                task_id=self.task_id,
                step_id="run_command",
                command=command,
                risk=risk.level,
                reasons=list(risk.reasons),
                warning_message=f"{risk.level}: {'; '.join(risk.reasons) or 'needs approval'}",
                added_by_agent=True,
            )
        )
        approved = self.inner.approve(command, risk)
        self.bus.emit(
            ApprovalDecided(
                task_id=self.task_id,
                step_id="run_command",
                command=command,
                approved=approved,
                by=decided_by(self.inner),
            )
        )
        return approved

    @property
    def refusal(self) -> str:
        """Why the inner approver said no, for the tool result the model reads."""
        return getattr(self.inner, "refusal", "it was not approved")


def decided_by(approver: Approver) -> str:
    """Who answered for ``approver``: its ``decided_by`` attribute when it has one."""
    by = getattr(approver, "decided_by", None)
    return by if isinstance(by, str) and by else "approver"


def _ledger(settings: Settings, store: Store | None) -> Ledger | None:
    if store is None:
        if settings.daily_token_budget is not None:
            raise ConfigError(
                "a daily token budget needs the run store to count what all tasks spent; "
                "check LOCALHAND_DB or unset the budget"
            )
        return None
    return Ledger(store, settings.daily_token_budget, settings.price_in, settings.price_out)


def follow_up_description(task: Task, result: Result) -> str:
    """The original task, restated with what the last run left undone."""
    lines = [task.description.strip(), ""]
    lines.append(
        f"A previous attempt stopped ({result.termination_reason}) after "
        f"{result.iterations_used} iterations."
    )
    if result.files_modified:
        lines.append("It modified: " + ", ".join(result.files_modified) + ".")
    if result.completed:
        lines.append("Already passing: " + "; ".join(result.completed) + ".")
    if result.remaining:
        lines.append("Still failing, to finish now: " + "; ".join(result.remaining) + ".")
    return "\n".join(lines)
