"""Plan mode (seed 003): a plan of shell commands that repairs itself when a step fails.

    from localhand.plan import PlanExecutor, load_plan
    from localhand.session.finish import finish

    plan = load_plan("plan.yaml", workspace)
    result = finish(PlanExecutor(plan, workspace, mode="agentic", model=model).play())
    print(result.to_json())

(``localhand.run_plan`` does the same from a plan file or a goal, with the settings' sandbox.)

Modules: ``model`` (Plan, Step, plan files), ``mutator`` (pure plan changes), ``memory``
(rolling memory), ``brain`` (diagnosis), ``executor`` + ``corrections`` (the loop and its
circuit breakers), ``gate`` (approval), ``draft`` (a plan from a goal), ``result``,
``events``, ``view``.
"""

from typing import TYPE_CHECKING

from localhand._lazy import lazy_exports

if TYPE_CHECKING:
    from localhand.plan.brain import Brain, Correction, parse_correction
    from localhand.plan.corrections import (
        BUDGET_WARNING_RATIO,
        MAX_RETRIES_PER_STEP,
        MAX_TOTAL_CORRECTIONS,
    )
    from localhand.plan.draft import Draft, DraftError, draft_plan
    from localhand.plan.executor import MODES, Mode, PlanExecutor
    from localhand.plan.memory import MemoryEntry, RollingMemory
    from localhand.plan.model import Plan, Step, load_plan, plan_from_data
    from localhand.plan.mutator import (
        MAX_ADDED_STEPS,
        PlanMutationError,
        ProtoStep,
        StepBudgetExceeded,
        insert_before,
        replace_command,
    )
    from localhand.plan.result import PlanResult

_LAZY = {
    "Brain": "brain",
    "Correction": "brain",
    "parse_correction": "brain",
    "BUDGET_WARNING_RATIO": "corrections",
    "MAX_RETRIES_PER_STEP": "corrections",
    "MAX_TOTAL_CORRECTIONS": "corrections",
    "Draft": "draft",
    "DraftError": "draft",
    "draft_plan": "draft",
    "MODES": "executor",
    "Mode": "executor",
    "PlanExecutor": "executor",
    "MemoryEntry": "memory",
    "RollingMemory": "memory",
    "Plan": "model",
    "Step": "model",
    "load_plan": "model",
    "plan_from_data": "model",
    "MAX_ADDED_STEPS": "mutator",
    "PlanMutationError": "mutator",
    "ProtoStep": "mutator",
    "StepBudgetExceeded": "mutator",
    "insert_before": "mutator",
    "replace_command": "mutator",
    "PlanResult": "result",
}
"""Where each name lives, loaded on first use: importing the CLI (or one plan module) does
not load all of plan mode."""

__all__ = [
    "BUDGET_WARNING_RATIO",
    "MAX_ADDED_STEPS",
    "MAX_RETRIES_PER_STEP",
    "MAX_TOTAL_CORRECTIONS",
    "MODES",
    "Brain",
    "Correction",
    "Draft",
    "DraftError",
    "MemoryEntry",
    "Mode",
    "Plan",
    "PlanExecutor",
    "PlanMutationError",
    "PlanResult",
    "ProtoStep",
    "RollingMemory",
    "Step",
    "StepBudgetExceeded",
    "draft_plan",
    "insert_before",
    "load_plan",
    "parse_correction",
    "plan_from_data",
    "replace_command",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
