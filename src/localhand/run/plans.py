"""``run_plan``: plan mode as a library call, beside ``run_task``.

The command line, batch files, the dashboard and MCP all start plans through it: a plan file,
a plan given as data, or a goal the model drafts a plan for; in the mode asked for (else the
mode the plan file names, else the settings' ``plan_mode``); with the settings' sandbox; to a
``PlanResult``. Like ``run_task``, bad input is a ``ConfigError`` and anything the model or a
step does ends up in the result, never as an exception.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.config import Settings, distrusting, load_settings
from localhand.errors import ConfigError, ModelError
from localhand.events import EventBus, Warning
from localhand.plan.runstep import DEFAULT_STEP_TIMEOUT_S
from localhand.run.runner import build_model, run_task, sandbox_of
from localhand.run.task import AGENTIC_TIMEOUT_S, Task

if TYPE_CHECKING:
    from localhand.models.base import ChatModel
    from localhand.plan.model import Plan
    from localhand.plan.result import PlanResult
    from localhand.safety.approval import Approver
    from localhand.types import Result


def run_plan(
    plan: Plan | Mapping[str, Any] | str | Path | None,
    workspace: str | Path,
    settings: Settings | None = None,
    *,
    goal: str | None = None,
    mode: str | None = None,
    bus: EventBus | None = None,
    model: ChatModel | None = None,
    approver: Approver | None = None,
    policy: str = "dangerous",
    approve_draft: Callable[[Plan], bool] | None = None,
    timeout_s: float | None = None,
    step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
    token_budget: int | None = None,
    task_id: str | None = None,
) -> PlanResult:
    """Run ``plan`` (a ``Plan``, plan data ``{"goal": ..., "steps": [...]}`` or the path of a
    plan file; with ``plan=None``, one the model drafts for ``goal``) in ``workspace``.

    ``approver`` answers for steps that ``policy`` says need approval (default: refuse, since
    nobody is there to ask). A drafted plan runs only if ``approve_draft`` (default: yes)
    says so; if not, the result says ``not_approved`` and nothing ran.
    """
    from localhand.plan.draft import DraftError, draft_plan
    from localhand.plan.executor import MODES, PLAN_LIMITS, PlanExecutor
    from localhand.plan.result import PlanResult, build_result

    if (plan is None) == (goal is None):
        raise ConfigError("give a plan (a file or its data) or a goal, not both and not neither")
    root = Path(workspace).expanduser().resolve()
    if not root.is_dir():
        raise ConfigError(f"workspace {root} is not a directory; create it or pass --workspace")
    task_id = task_id or uuid.uuid4().hex[:12]
    bus = bus or EventBus()

    def warn(message: str) -> None:
        bus.emit(Warning(task_id=task_id, message=message))

    settings, distrusted = distrusting(settings or load_settings(), root)
    for message in distrusted:
        warn(message)
    the_plan = None if plan is None else _plan_of(plan, root)
    chosen = mode or (the_plan.mode if the_plan is not None else None) or settings.plan_mode
    if chosen not in MODES:
        raise ConfigError(f"unknown plan mode {chosen!r}; use one of {', '.join(MODES)}")
    try:
        with sandbox_of(settings, warn):
            if model is None and (the_plan is None or chosen == "agentic"):
                model = build_model(settings, on_warning=warn)
            spent = None
            if the_plan is None:
                assert model is not None and goal is not None
                draft = draft_plan(model, goal, root)
                the_plan, spent = draft.plan, draft.usage
                if approve_draft is not None and not approve_draft(the_plan):
                    return build_result(
                        the_plan,
                        task_id=task_id,
                        mode=chosen,
                        termination_reason="not_approved",
                        message="the drafted plan was not approved (pass --yes to run it)",
                        model_used=model.name,
                        tokens_in=spent.prompt_tokens,
                        tokens_out=spent.completion_tokens,
                    )
            limits = replace(
                PLAN_LIMITS,
                wall_clock_s=timeout_s or AGENTIC_TIMEOUT_S,
                token_budget=token_budget,
            )
            executor = PlanExecutor(
                the_plan,
                root,
                mode=chosen,  # type: ignore[arg-type]  # checked against MODES above
                model=model,
                approver=approver,
                policy=policy,  # type: ignore[arg-type]  # PlanExecutor checks it
                limits=limits,
                bus=bus,
                task_id=task_id,
                step_timeout_s=step_timeout_s,
                spent=spent,
            )
            return executor.run()
    except (ModelError, DraftError) as exc:
        return PlanResult(
            task_id=task_id,
            goal=goal or (the_plan.goal if the_plan is not None else ""),
            mode=chosen,
            status="error",
            termination_reason="error",
            output=f"error: {exc}",
            error=str(exc),
        )


def _plan_of(plan: Plan | Mapping[str, Any] | str | Path, root: Path) -> Plan:
    """``plan`` as a ``Plan`` with its steps classified for ``root``."""
    from localhand.plan.model import Plan, classified, load_plan, plan_from_data

    if isinstance(plan, Plan):
        steps = tuple(classified(step, root, floor=step.risk) for step in plan.steps)
        return replace(plan, steps=steps)
    if isinstance(plan, Mapping):
        return plan_from_data(dict(plan), root)
    return load_plan(Path(plan).expanduser(), root)


def run_any(
    task: Task,
    settings: Settings,
    *,
    bus: EventBus | None = None,
    model: ChatModel | None = None,
    approver: Approver | None = None,
    **loop_options: Any,
) -> Result | PlanResult:
    """Run ``task``: through ``run_plan`` when it is a plan task (``Task.is_plan``: a plan to
    run, or a mode, with which the model drafts a plan for the description), else through
    ``run_task`` (``loop_options`` are ``run_task``'s: a store, a follow-up directory)."""
    if not task.is_plan:
        return run_task(task, settings, bus=bus, model=model, approver=approver, **loop_options)
    settings = settings.with_overrides(model=task.model, backend=task.backend)
    plan = Path(task.plan) if isinstance(task.plan, str) else task.plan
    return run_plan(
        plan,
        task.workspace,
        settings,
        goal=task.description if plan is None else None,
        mode=task.mode,
        bus=bus,
        model=model,
        approver=approver,
        policy=settings.approve,
        timeout_s=task.timeout_s,
        token_budget=task.token_budget,
        task_id=task.id,
    )
