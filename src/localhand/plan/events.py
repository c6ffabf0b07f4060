"""Plan-mode events (DESIGN.md): each is a frozen ``Event`` with ``type``, ``task_id``, ``ts``.

Plans travel as plain dicts (``Plan.to_dict()``), not as ``Plan`` values, so every event is
JSON as it stands for the store and the dashboard, and a consumer needs no localhand types.
"""

from __future__ import annotations

from typing import Any

from localhand.events import Event


class PlanStarted(Event, type="plan_started"):
    """The plan as it is about to run (an addition to the DESIGN.md list: views need it)."""

    plan: dict[str, Any]
    mode: str


class StepStarted(Event, type="step_started"):
    step_id: str
    index: int
    description: str
    command: str
    attempt: int
    risk: str


class StepFinished(Event, type="step_finished"):
    step_id: str
    index: int
    status: str
    """``done`` or ``failed``."""
    attempt: int
    exit_code: int | None
    output_tail: str
    duration_ms: int
    timed_out: bool = False
    stopped: bool = False
    """Ended by a Stop (the run was cancelled while the command ran)."""
    refused: str | None = None
    """Why the step did not run at all (approval refused), else None."""


class AgentThinking(Event, type="agent_thinking"):
    step_id: str
    attempt: int
    corrections_used: int


class AgentStuck(Event, type="agent_stuck"):
    step_id: str
    attempts: int
    reason: str


class RetryAttempt(Event, type="retry_attempt"):
    step_id: str
    retry: int
    """1 for the first retry of this step."""
    max_retries: int
    command: str
    reason: str
    new_command: bool = False
    """True when the retry runs a different command than the attempt that failed."""


class StepSkipped(Event, type="step_skipped"):
    step_id: str
    reason: str


class BudgetWarning(Event, type="budget_warning"):
    budget: str
    """``corrections`` (running low) or ``added_steps`` (an insertion was refused)."""
    used: int
    limit: int
    message: str


class PlanRevised(Event, type="plan_revised"):
    plan: dict[str, Any]
    """The whole new plan."""
    action: str
    """The correction that produced it: ``retry`` (with a new command), ``modify`` or
    ``insert_steps``."""
    reason: str


class PlanCancelled(Event, type="plan_cancelled"):
    reason: str
    termination_reason: str
    step_id: str | None = None
