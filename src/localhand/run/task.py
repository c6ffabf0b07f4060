"""The task: what to do, where, within which limits, and how to check it was done.

One model serves ``run``, ``--task-file``, ``batch`` and the dashboard. A task file (JSON or
YAML) holds the same fields; see ``taskfile.py`` and docs/running-tasks.md.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from localhand.evidence.verify import Check, CommandCheck, FileContains, FileExists
from localhand.run.guardrails import Limits
from localhand.types import TIER_ITERATIONS

AGENTIC_TIMEOUT_S = 30 * 60
SIMPLE_TIMEOUT_S = 10 * 60


@dataclass(frozen=True, slots=True)
class Task:
    """One unit of work. ``None`` limits take the defaults of the tier and the kind of task."""

    description: str
    workspace: Path = field(default_factory=Path.cwd)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    tier: str = "standard"
    """``trivial`` (5 iterations), ``standard`` (10) or ``complex`` (20)."""
    agentic: bool | None = None
    """True: the tool loop. False: one streamed answer without tools. None: decided per task."""
    max_iterations: int | None = None
    timeout_s: float | None = None
    """Wall clock for the whole task: 30 minutes for agentic tasks, 10 for simple ones."""
    token_budget: int | None = None
    checks: tuple[Check, ...] = ()
    """Verification: each must pass for the task to pass."""
    model: str | None = None
    backend: str | None = None
    context_files: tuple[str, ...] = ()
    """Workspace files whose contents go into the prompt."""
    plan: str | dict[str, Any] | None = None
    """Plan mode: the path of a plan file, or the plan itself (``{"goal", "steps"}``). A plan
    task runs through ``run_plan`` (``localhand.session.door.Session``) instead of the loop."""
    mode: str | None = None
    """Plan mode's mode (teacher | planner | agentic); else the plan's own, else the settings'."""
    output_schema: dict[str, Any] | None = None
    """A JSON schema the final answer must follow, into the Result's ``answer_json``
    (``localhand.session.structured``); not for a plan task, whose answer is localhand's own."""

    @property
    def is_plan(self) -> bool:
        """Whether the task runs in plan mode: it names a plan or a mode (a plan is then
        drafted for the description)."""
        return self.plan is not None or self.mode is not None

    def limits(self, agentic: bool = True) -> Limits:
        default_timeout = AGENTIC_TIMEOUT_S if agentic else SIMPLE_TIMEOUT_S
        return Limits(
            max_iterations=self.max_iterations or TIER_ITERATIONS[self.tier],
            wall_clock_s=self.timeout_s or default_timeout,
            token_budget=self.token_budget,
        )

    def with_changes(self, **changes: Any) -> Task:
        """A copy with the given fields replaced; ``None`` values are ignored."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_dict(self) -> dict[str, Any]:
        """The task in task-file form (``localhand run --task-file``)."""
        data: dict[str, Any] = {
            "id": self.id,
            "description": self.description,
            "workspace": str(self.workspace),
            "tier": self.tier,
        }
        if self.agentic is not None:
            data["agentic"] = self.agentic
        limits = {
            "iterations": self.max_iterations,
            "timeout": self.timeout_s,
            "token_budget": self.token_budget,
        }
        if any(v is not None for v in limits.values()):
            data["limits"] = {k: v for k, v in limits.items() if v is not None}
        if self.checks:
            data["verify"] = [check_to_spec(check) for check in self.checks]
        for key in ("model", "backend"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.context_files:
            data["context_files"] = list(self.context_files)
        for key in ("plan", "mode", "output_schema"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        return data


def check_to_spec(check: Check) -> str | dict[str, Any]:
    """A check as it is written in a task file."""
    if isinstance(check, CommandCheck):
        return check.command
    if isinstance(check, FileExists):
        return {"file_exists": check.path}
    if isinstance(check, FileContains):
        return {"file_contains": {"path": check.path, "text": check.text}}
    raise TypeError(f"{type(check).__name__} cannot be written to a task file")
