"""Plan mode with the user's hooks: each step's command goes to them as a ``run_command``
call would (a ``pre_tool`` hook that exits 2 refuses the step, its stderr the reason the
brain reads) and the post hooks' output joins the step's output. The ``stop`` hooks get the
plan's Result where every run's do, in ``localhand.session.finish``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from localhand.hooks.hookset import Hooks
from localhand.plan.executor import PlanExecutor
from localhand.plan.model import Step
from localhand.plan.runstep import StepOutcome
from localhand.types import ToolCall, ToolResult


class HookedPlanExecutor(PlanExecutor):
    """``PlanExecutor`` whose steps pass ``hooks``."""

    def __init__(self, *args: Any, hooks: Hooks, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hooks = hooks

    def execute(self, step: Step, timeout_s: float) -> StepOutcome:
        call = ToolCall("run_command", {"command": step.command})
        blocked = self.hooks.before(call)
        if blocked is not None:
            return StepOutcome.refusal(blocked.content)
        outcome = super().execute(step, timeout_s)
        ran = ToolResult(outcome.output, ok=outcome.ok)
        after = self.hooks.after(call, ran)
        return outcome if after is ran else replace(outcome, output=after.content)


__all__ = ["HookedPlanExecutor"]
