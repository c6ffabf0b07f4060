"""``run_task``, ``run_plan`` and ``run_any``: the library's ways in, each a ``Session``.

Like every door, bad input is a ``ConfigError``, and anything the model, a tool or a step does
ends up in the Result, never as an exception.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from localhand.config.settings import load_settings
from localhand.errors import ConfigError
from localhand.plan.runstep import DEFAULT_STEP_TIMEOUT_S
from localhand.run.task import Task
from localhand.session.continuing import continued_from_store
from localhand.session.door import Session
from localhand.session.plans import PlanRequest

if TYPE_CHECKING:
    from localhand.config.settings import Settings
    from localhand.events import EventBus
    from localhand.models.base import ChatModel
    from localhand.plan.model import Plan
    from localhand.plan.result import PlanResult
    from localhand.safety.approval.approver import Approver, PlainApprover
    from localhand.store import Store
    from localhand.types import Result


def run_task(
    task: Task,
    settings: Settings,
    *,
    bus: EventBus | None = None,
    model: ChatModel | None = None,
    follow_up_dir: Path | None = None,
    store: Store | None = None,
    approver: Approver | PlainApprover | None = None,
    continue_from: str | None = None,
    output_schema: dict[str, Any] | None = None,
) -> Result:
    """Run one task to its Result (see ``localhand.session.door.Session``).

    ``continue_from``: a recorded run's id (or ``last``) to carry on, in its workspace and with
    its conversation, ``task.description`` as the new instructions; the model, limits and
    checks are the earlier run's unless ``task`` sets them (``localhand.session.continuing``).
    ``output_schema``: a JSON schema the final answer must follow, in the Result's
    ``answer_json`` (``localhand.session.structured``).

    When the task does not pass, a follow-up task file for what remains is written to
    ``follow_up_dir`` (default: ``tasks/`` in localhand's data directory). With a ``store``,
    every model call is booked in its token ledger and the daily budget is enforced.
    Commands that ``settings.approve`` says need approval go to ``approver`` (default: refuse,
    since nobody is there to ask); each request is announced as an ``approval_needed`` event.
    """
    if task.is_plan:
        raise ConfigError(
            f"task {task.id} names a plan: run it with run_plan or run_any "
            "(localhand.session.api), as localhand plan and localhand batch do"
        )
    parent = None
    if continue_from is not None:  # the earlier run, looked up where the new one is recorded
        task, parent = continued_from_store(continue_from, task, store=store)
    session = Session(
        task,
        settings,
        bus=bus,
        model=model,
        follow_up_dir=follow_up_dir,
        store=store,
        approver=approver,
        continuing=parent,
        output_schema=output_schema,
    )
    # Given no store, a continued run is recorded in the default one, where its parent was
    # found, so that the chain links up.
    with session.recording() if parent is not None and store is None else nullcontext():
        return cast("Result", session.run())


def run_plan(
    plan: Plan | Mapping[str, Any] | str | Path | None,
    workspace: str | Path,
    settings: Settings | None = None,
    *,
    goal: str | None = None,
    mode: str | None = None,
    bus: EventBus | None = None,
    model: ChatModel | None = None,
    approver: Approver | PlainApprover | None = None,
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
    if (plan is None) == (goal is None):
        raise ConfigError("give a plan (a file or its data) or a goal, not both and not neither")
    task = Task(
        description=goal or "",
        workspace=Path(workspace).expanduser().resolve(),
        id=task_id or uuid.uuid4().hex[:12],
        mode=mode,
        timeout_s=timeout_s,
        token_budget=token_budget,
    )
    request = PlanRequest(plan, policy, approve_draft, step_timeout_s)
    session = Session(
        task, settings or load_settings(), bus=bus, model=model, approver=approver, plan=request
    )
    return cast("PlanResult", session.run())


def run_any(
    task: Task,
    settings: Settings,
    *,
    bus: EventBus | None = None,
    model: ChatModel | None = None,
    approver: Approver | PlainApprover | None = None,
    store: Store | None = None,
    follow_up_dir: Path | None = None,
) -> Result | PlanResult:
    """Run ``task``: in plan mode when it is a plan task (``Task.is_plan``: a plan to run, or a
    mode, with which the model drafts a plan for the description), else in the tool loop."""
    session = Session(
        task,
        settings,
        bus=bus,
        model=model,
        approver=approver,
        store=store,
        follow_up_dir=follow_up_dir,
    )
    return session.run()
