"""What the door hands the tool loop or plan mode once its prologue is done, as data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.events import EventBus, ModelStatus, Warning

if TYPE_CHECKING:
    from localhand.cancel import Cancellation
    from localhand.config.settings import Settings
    from localhand.models.base import ChatModel
    from localhand.run.task import Task
    from localhand.safety.approval.announce import AnnouncedApprover
    from localhand.safety.approval.approver import Approver
    from localhand.session.continuing import Continuation
    from localhand.store import Store
    from localhand.tools.registry import ToolRegistry

    ToolWrapper = Callable[[ToolRegistry], ToolRegistry]
    """What a door may put around the run's tools (``Session(wrap_tools=...)``)."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """One run, ready to start: the task with its gated checks, the settings the workspace's
    files may no longer loosen, and what the session holds for it."""

    task: Task
    settings: Settings
    bus: EventBus
    approver: Approver
    """Who answers approvals (the door's: the terminal, the page, nobody)."""
    announced: AnnouncedApprover
    """The same, with each request and answer on the run's timeline."""
    cancellation: Cancellation
    model: ChatModel | None = None
    """A model the caller gave; ``None``: the settings' backend is built."""
    store: Store | None = None
    follow_up_dir: Path | None = None
    output_schema: dict[str, Any] | None = None
    """``--output-schema``: the JSON schema the final answer must follow."""
    continuing: Continuation | None = None
    """The earlier run this one carries on (``--continue``), with its conversation."""
    wrap_tools: Callable[[ToolRegistry], ToolRegistry] | None = None
    """The door's wrapper around the run's tools, applied last (see ``Session``)."""

    def warn(self, message: str) -> None:
        self.bus.emit(Warning(task_id=self.task.id, message=message))

    def status(self, message: str) -> None:
        self.bus.emit(ModelStatus(task_id=self.task.id, message=message))
