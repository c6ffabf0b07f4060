"""How a plan ends early: a ``PlanStop`` (a ``StopRun``, localhand.errors) with its
termination reason:

    step_failed      a step failed in planner or teacher mode
    refused          a step was not approved, in planner or teacher mode
    aborted          the brain chose abort (or could not diagnose)
    stuck            a step failed after its retries were spent
    max_corrections  the plan used all its corrections

Guardrails raise their own (``WallClockTimeout``, ``BudgetExceeded``); Ctrl-C is ``cancelled``.
"""

from __future__ import annotations

from localhand.errors import StopRun


class PlanStop(StopRun):
    """The plan did not complete, for ``reason``; ``step_id`` is the step it stopped at."""

    def __init__(self, reason: str, message: str, *, step_id: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.step_id = step_id
