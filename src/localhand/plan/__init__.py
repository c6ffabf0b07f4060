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
    from localhand.plan.brain import Brain as Brain
    from localhand.plan.brain import Correction as Correction
    from localhand.plan.brain import parse_correction as parse_correction
    from localhand.plan.corrections import BUDGET_WARNING_RATIO as BUDGET_WARNING_RATIO
    from localhand.plan.corrections import MAX_RETRIES_PER_STEP as MAX_RETRIES_PER_STEP
    from localhand.plan.corrections import MAX_TOTAL_CORRECTIONS as MAX_TOTAL_CORRECTIONS
    from localhand.plan.draft import Draft as Draft
    from localhand.plan.draft import DraftError as DraftError
    from localhand.plan.draft import draft_plan as draft_plan
    from localhand.plan.executor import MODES as MODES
    from localhand.plan.executor import Mode as Mode
    from localhand.plan.executor import PlanExecutor as PlanExecutor
    from localhand.plan.memory import MemoryEntry as MemoryEntry
    from localhand.plan.memory import RollingMemory as RollingMemory
    from localhand.plan.model import Plan as Plan
    from localhand.plan.model import Step as Step
    from localhand.plan.model import load_plan as load_plan
    from localhand.plan.model import plan_from_data as plan_from_data
    from localhand.plan.mutator import MAX_ADDED_STEPS as MAX_ADDED_STEPS
    from localhand.plan.mutator import PlanMutationError as PlanMutationError
    from localhand.plan.mutator import ProtoStep as ProtoStep
    from localhand.plan.mutator import StepBudgetExceeded as StepBudgetExceeded
    from localhand.plan.mutator import insert_before as insert_before
    from localhand.plan.mutator import replace_command as replace_command
    from localhand.plan.result import PlanResult as PlanResult

_LAZY = {
    "brain": "Brain Correction parse_correction",
    "corrections": "BUDGET_WARNING_RATIO MAX_RETRIES_PER_STEP MAX_TOTAL_CORRECTIONS",
    "draft": "Draft DraftError draft_plan",
    "executor": "MODES Mode PlanExecutor",
    "memory": "MemoryEntry RollingMemory",
    "model": "Plan Step load_plan plan_from_data",
    "mutator": (
        "MAX_ADDED_STEPS PlanMutationError ProtoStep StepBudgetExceeded insert_before"
        " replace_command"
    ),
    "result": "PlanResult",
}
"""Where each name lives, loaded on first use: importing the CLI (or one plan module) does
not load all of plan mode."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY)
