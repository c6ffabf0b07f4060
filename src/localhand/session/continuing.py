"""Continuing a run: ``localhand run --continue RUN "more instructions"``, the library's
``run_task(..., continue_from=RUN)`` and MCP ``run_task``'s ``continue_from``.

The new run starts from the conversation the earlier one left (``store.lineage``), unchanged,
with the new instructions as one more user message: the messages sent start with exactly the
earlier run's, so a server that caches the prompt's prefix (Ollama, llama-server) reuses it
instead of reading the whole conversation again. It runs in the same workspace, with the
same model, limits and checks unless the caller gives others, and names its parent in the
store (``show`` and the dashboard print the link).
"""

from __future__ import annotations

import json
import tempfile
import uuid
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.errors import ConfigError
from localhand.run.task import Task
from localhand.store import open_store
from localhand.store.lineage import conversation

if TYPE_CHECKING:
    from localhand.store import Store
    from localhand.types import Message


@dataclass(frozen=True, slots=True)
class Continuation:
    """A run to carry on: its id, the conversation it left, and the task it ran (its spec as
    recorded, with a fresh id and the new instructions as the description)."""

    parent: str
    history: tuple[Message, ...]
    task: Task
    collected: dict[str, Any] | None = None
    """The tests the chain's first run collected per check, to grade this run against."""


def continuation(store: Store, ref: str, instructions: str) -> Continuation:
    """The run ``ref`` names (an id, a unique prefix, ``last``), ready to be carried on with
    ``instructions``; a ``ConfigError`` that says what to do when it cannot be."""
    if not instructions or not instructions.strip():
        raise ConfigError(
            f'say what the continued run should do: localhand run --continue {ref} "INSTRUCTIONS"'
        )
    info = store.run(ref)  # StoreError (a ConfigError) for an unknown or ambiguous id
    spec = store.task_spec(info.task_id)
    if spec.get("plan") is not None or spec.get("mode") is not None or _ran_a_plan(store, info.id):
        raise ConfigError(
            f"run {info.id} ran a plan, which has no conversation to continue; run the plan "
            "again with localhand plan, or start a new run with localhand run"
        )
    workspace = Path(info.workspace or spec.get("workspace") or "")
    if not info.workspace or not workspace.is_dir():
        raise ConfigError(
            f"the workspace of run {info.id} ({workspace}) is gone, so the run cannot be "
            "continued where it left off; start a new run with localhand run --workspace DIR"
        )
    history, collected = conversation(store, info.id) or ([], None)
    if not history:
        raise ConfigError(
            f"run {info.id} left no conversation to continue (it ended before the model "
            "answered, or was recorded by an older localhand); start a "
            "new run with localhand run"
        )
    task = _task_of(spec, workspace, info.model).with_changes(
        description=instructions, agentic=True
    )
    return Continuation(parent=info.id, history=tuple(history), task=task, collected=collected)


def _ran_a_plan(store: Store, run_id: str) -> bool:
    """Whether the run was plan mode's (``localhand plan`` records no plan in the task)."""
    return bool(store.events(run_id, types=("plan_started",)))


def _task_of(spec: dict[str, object], workspace: Path, model: str) -> Task:
    """The recorded task read back as a task file would be, with a fresh id; without a stored
    spec, a task in the same workspace with the same model."""
    # loads annotated_types, pydantic, pydantic_core: only when needed
    from localhand.taskfile import load_task_file

    fresh = uuid.uuid4().hex[:12]
    if not spec.get("description"):
        return Task(description="", workspace=workspace, id=fresh, model=model or None)
    data = {key: value for key, value in spec.items() if key not in ("id", "verify_incomplete")}
    data["workspace"] = str(workspace)
    data.setdefault("model", model or None)
    with tempfile.TemporaryDirectory(prefix="localhand-continue-") as folder:
        path = Path(folder) / "task.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        task = load_task_file(path, pin=False)  # from the store, written here: nothing to trust
    return task.with_changes(id=fresh)


def carried_on(parent: Continuation, given: Task) -> Task:
    """The continued run's task: the parent's, with what ``given`` sets (model, backend,
    limits, checks) instead of it, and ``given``'s id and description (the new
    instructions)."""
    return parent.task.with_changes(
        id=given.id,
        description=given.description,
        model=given.model,
        backend=given.backend,
        max_iterations=given.max_iterations,
        timeout_s=given.timeout_s,
        token_budget=given.token_budget,
        checks=given.checks or None,
    )


def continued_from_store(
    ref: str, given: Task, db: Path | None = None, *, store: Store | None = None
) -> tuple[Task, Continuation]:
    """``--continue REF``: the earlier run looked up in ``store`` (else the one at ``db``, else
    the default one), and the task that carries it on with ``given``'s settings."""
    with nullcontext(store) if store is not None else open_store(db) as found:
        parent = continuation(found, ref, given.description)
    return carried_on(parent, given), parent
