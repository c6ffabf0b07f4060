"""One task of a batch, the same way on every executor: a fresh workspace, the agent (or plan
mode, for a plan task), a Result.

Nothing raises out of :func:`run_one`: a workspace that cannot be made or a task that cannot
start becomes a Result with ``status="error"`` and a message a person can act on, so one bad
task never stops the batch.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localhand.batch.workspace import task_workspace
from localhand.config.settings import Settings
from localhand.errors import LocalhandError
from localhand.events import EventBus
from localhand.models.base import ChatModel
from localhand.paths import write_private
from localhand.run.task import Task
from localhand.session.door import Session
from localhand.types import Result


@dataclass
class TaskOutcome:
    """A task's Result (as its JSON dict) and where and how it ran."""

    result: dict[str, Any]
    where: list[str] = field(default_factory=list)
    """The endpoints (or Ray nodes) it ran on, in order."""
    changes_ref: str | None = None
    """For a git worktree: the ref that keeps what the task changed."""
    workspace: str | None = None
    """The workspace, when it was kept (``--keep-workspaces``)."""


def run_one(
    task: Task,
    settings: Settings,
    *,
    model: ChatModel,
    bus: EventBus,
    root: Path,
    keep: bool = False,
    store: Any = None,
    follow_up_dir: Path | None = None,
    copied: Callable[[], None] | None = None,
) -> TaskOutcome:
    """Run ``task`` with ``model`` in a fresh workspace under ``root``; ``copied`` is called
    once it is there, before the run starts."""
    try:
        with task_workspace(task.workspace, root, task.id, keep=keep) as prepared:
            if copied is not None:
                copied()
            session = Session(  # no person to ask: a verify line that needs a yes is refused
                task.with_changes(workspace=prepared.path),
                settings,
                bus=bus,
                model=model,
                store=store,
                follow_up_dir=follow_up_dir,
            )
            result = session.run()
    except (LocalhandError, OSError) as exc:
        return TaskOutcome(error_result(task, settings, str(exc)))
    data = result.to_dict()
    _point_follow_up_at(data.get("follow_up_task"), task.workspace)
    return TaskOutcome(
        data,
        changes_ref=prepared.ref,
        workspace=str(prepared.path) if keep else None,
    )


def error_result(task: Task, settings: Settings, message: str) -> dict[str, Any]:
    """The Result of a task that could not run."""
    return Result.failed(task.id, message, model=task.model or settings.model).to_dict()


def _point_follow_up_at(path: str | None, workspace: Path) -> None:
    """A follow-up task file names the task's workspace, which was a throwaway one: point it
    at the batch task's own workspace instead."""
    if not path:
        return
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        data["workspace"] = str(workspace)
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        write_private(Path(path), text.encode("utf-8"))  # as write_task_file wrote it
    except (OSError, ValueError, TypeError):
        pass
