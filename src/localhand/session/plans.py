"""Plan mode behind the door: a plan file, a plan given as data, or a goal the model drafts
a plan for, run by ``PlanExecutor`` to a ``PlanResult``.

``localhand.session.door.Session`` calls ``run_plan_mode`` once the prologue is done (inside
the sandbox), and finishes the ``Outcome`` of a plan that ran (``localhand.session.finish``);
the public ``run_plan`` is in ``localhand.session.api``. Bad input is a ``ConfigError``;
anything the model or a step does ends up in the result. A plan that never ran (its draft not
approved, or not drafted for a model error) is its ``PlanResult`` at once, which the door
announces as it does any Result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.errors import ConfigError, ModelError
from localhand.plan.runstep import DEFAULT_STEP_TIMEOUT_S
from localhand.run.task import AGENTIC_TIMEOUT_S
from localhand.session.backend import select_backend
from localhand.session.runner import hooks_for

if TYPE_CHECKING:
    from localhand.plan.model import Plan
    from localhand.plan.result import PlanResult
    from localhand.run.lifecycle import Outcome
    from localhand.session.prepared import Prepared


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """What plan mode needs beyond its task: the plan (a ``Plan``, its data or a plan file;
    ``None``: the model drafts one for the task's description) and how to run it."""

    plan: Plan | Mapping[str, Any] | str | Path | None = None
    policy: str | None = None
    """Which steps need approval; ``None``: the settings' ``approve``."""
    approve_draft: Callable[[Plan], bool] | None = None
    """Asked before a drafted plan runs (default: yes)."""
    step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S


def run_plan_mode(ready: Prepared, request: PlanRequest) -> Outcome[PlanResult] | PlanResult:
    """Plan mode for the task the door prepared: the plan ``request`` names (or one the model
    drafts for the task's description), in the mode asked for (else the mode the plan file
    names, else the settings' ``plan_mode``)."""
    # loads annotated_types, pydantic, pydantic_core: only when needed
    from localhand.plan.draft import DraftError, draft_plan

    # loads annotated_types, pydantic, pydantic_core: only when needed
    from localhand.plan.executor import MODES, PLAN_LIMITS, PlanExecutor
    from localhand.plan.result import PlanResult, build_result  # pydantic, as above

    task, settings = ready.task, ready.settings
    root = task.workspace
    the_plan = None if request.plan is None else _plan_of(request.plan, root)
    chosen = task.mode or (the_plan.mode if the_plan is not None else None) or settings.plan_mode
    if chosen not in MODES:
        raise ConfigError(f"unknown plan mode {chosen!r}; use one of {', '.join(MODES)}")
    model = ready.model
    try:
        if model is None and (the_plan is None or chosen == "agentic"):
            model = select_backend(settings, ready.warn)
        spent, spent_prefill = None, None
        if the_plan is None:
            assert model is not None
            draft = draft_plan(model, task.description, root)
            the_plan, spent, spent_prefill = draft.plan, draft.usage, draft.prefill
            if request.approve_draft is not None and not request.approve_draft(the_plan):
                return build_result(
                    the_plan,
                    task_id=task.id,
                    mode=chosen,
                    termination_reason="not_approved",
                    message="the drafted plan was not approved (pass --yes to run it)",
                    model_used=model.name,
                    tokens_in=spent.prompt_tokens,
                    tokens_out=spent.completion_tokens,
                    prefill=draft.prefill,
                )
        limits = replace(
            PLAN_LIMITS,
            wall_clock_s=task.timeout_s or AGENTIC_TIMEOUT_S,
            token_budget=task.token_budget,
        )
        kind: type[PlanExecutor] = PlanExecutor
        extra: dict[str, Any] = {}
        hooks = hooks_for(ready)
        if hooks is not None:  # each step's command passes the user's hooks
            # loads annotated_types, pydantic, pydantic_core: only when needed
            from localhand.session.plan_hooks import HookedPlanExecutor

            kind, extra = HookedPlanExecutor, {"hooks": hooks}
        executor = kind(
            the_plan,
            root,
            mode=chosen,  # type: ignore[arg-type]  # checked against MODES above
            model=model,
            approver=ready.approver,
            policy=request.policy or settings.approve,  # type: ignore[arg-type]  # checked there
            limits=limits,
            bus=ready.bus,
            task_id=task.id,
            step_timeout_s=request.step_timeout_s,
            spent=spent,
            spent_prefill=spent_prefill,
            cancellation=ready.cancellation,
            **extra,
        )
        return executor.play()
    except (ModelError, DraftError) as exc:
        goal = task.description or (the_plan.goal if the_plan is not None else "")
        return PlanResult.failed(task.id, str(exc), goal=goal, mode=chosen)


def _plan_of(plan: Plan | Mapping[str, Any] | str | Path, root: Path) -> Plan:
    """``plan`` as a ``Plan`` with its steps classified for ``root``."""
    # plan mode's modules, and pydantic with them, load with the first plan
    from localhand.plan.model import Plan, classified, load_plan, plan_from_data

    if isinstance(plan, Plan):
        steps = tuple(classified(step, root, floor=step.risk) for step in plan.steps)
        return replace(plan, steps=steps)
    if isinstance(plan, Mapping):
        return plan_from_data(dict(plan), root)
    return load_plan(Path(plan).expanduser(), root)
