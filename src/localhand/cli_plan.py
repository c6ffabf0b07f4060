"""``localhand plan``: run a plan file, or a plan the model drafts from a goal. Wiring only.

``register(app)`` adds the command to the main CLI. ``python -m localhand.cli_plan plan ...``
runs it on its own. Exit codes as for ``run``: 0 pass, 1 partial_pass or fail, 2 usage,
configuration or a model server that cannot serve the plan (status ``error``).
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import replace
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from localhand.config import BACKENDS
from localhand.errors import ConfigError, ModelError
from localhand.plan.runstep import DEFAULT_STEP_TIMEOUT_S

if TYPE_CHECKING:  # plan mode loads when the command runs: the other commands start faster
    from rich.console import Console

    from localhand.config import Settings
    from localhand.models.base import ChatModel
    from localhand.plan.model import Plan
    from localhand.plan.result import PlanResult
    from localhand.plan.view import PlanView

EXIT_CODES = {"pass": 0, "partial_pass": 1, "fail": 1, "error": 2}


@cache
def _err() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def build_model(settings: Settings, on_warning: Any = None) -> ChatModel:
    """``localhand.runner.build_model``, imported when a plan needs a model."""
    from localhand.runner import build_model

    return build_model(settings, on_warning=on_warning)


class PlanMode(StrEnum):
    teacher = "teacher"
    planner = "planner"
    agentic = "agentic"


class Approve(StrEnum):
    never = "never"
    dangerous = "dangerous"
    always = "always"


Backend = StrEnum("Backend", [(name, name) for name in BACKENDS])  # type: ignore[misc]


def plan(
    file: Annotated[
        Path | None, typer.Argument(help="Plan file, JSON or YAML (or use --goal).")
    ] = None,
    goal: Annotated[
        str | None, typer.Option("--goal", help="Let the model draft a plan for this goal.")
    ] = None,
    mode: Annotated[
        PlanMode,
        typer.Option(
            help="teacher: ask before each step; planner: stop at the first failure; "
            "agentic: diagnose failures and repair the plan."
        ),
    ] = PlanMode.planner,
    workspace: Annotated[
        Path | None, typer.Option("--workspace", "-w", help="Directory the steps run in.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name, e.g. qwen3:8b.")] = None,
    backend: Annotated[Backend | None, typer.Option(help="Where the model runs.")] = None,
    host: Annotated[
        str | None, typer.Option(help="Server URL (default: OLLAMA_HOST or localhost:11434).")
    ] = None,
    approve: Annotated[
        Approve, typer.Option(help="Which steps need approval before they run.")
    ] = Approve.dangerous,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Run a drafted plan without asking first.")
    ] = False,
    timeout: Annotated[
        float | None, typer.Option(min=1, help="Wall clock for the whole plan, in seconds.")
    ] = None,
    step_timeout: Annotated[
        float, typer.Option(min=1, help="Default time limit of one step, in seconds.")
    ] = DEFAULT_STEP_TIMEOUT_S,
    token_budget: Annotated[
        int | None, typer.Option(min=1, help="Tokens (prompt + reply) the plan may spend.")
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print only the Plan Result, as one JSON line.")
    ] = False,
) -> None:
    """Run a plan of shell commands step by step; in agentic mode, repair it when a step fails."""
    from rich.markup import escape

    from localhand.approval import TerminalApprover
    from localhand.cli_store import RunRecording
    from localhand.config import load_settings
    from localhand.events import EventBus, Warning
    from localhand.plan.draft import DraftError, draft_plan
    from localhand.plan.executor import PLAN_LIMITS, PlanExecutor
    from localhand.plan.model import load_plan
    from localhand.plan.result import PlanResult, build_result
    from localhand.plan.view import PlanView
    from localhand.task import AGENTIC_TIMEOUT_S, Task

    err = _err()
    task_id = uuid.uuid4().hex[:12]
    bus = EventBus()
    view = PlanView(err)
    if not json_output:
        bus.subscribe(view)
    try:
        if (file is None) == (goal is None):
            raise ConfigError("give a plan FILE or --goal TEXT, not both and not neither")
        root = (workspace or Path(".")).expanduser().resolve()
        if not root.is_dir():
            raise ConfigError(f"workspace {root} is not a directory; create it or pass --workspace")
        settings = load_settings().with_overrides(
            model=model, backend=backend.value if backend else None, host=host
        )
        chat_model = None
        if goal is not None or mode is PlanMode.agentic:
            chat_model = build_model(
                settings, on_warning=lambda m: bus.emit(Warning(task_id=task_id, message=m))
            )
        spent = None
        if file is not None:
            the_plan = load_plan(file, root)
        else:
            assert chat_model is not None and goal is not None
            draft = draft_plan(chat_model, goal, root)
            the_plan, spent = draft.plan, draft.usage
            if not _draft_approved(the_plan, yes, view):
                result = build_result(
                    the_plan,
                    task_id=task_id,
                    mode=mode.value,
                    termination_reason="not_approved",
                    message="the drafted plan was not approved (pass --yes to run it)",
                    model_used=chat_model.name,
                    tokens_in=spent.prompt_tokens,
                    tokens_out=spent.completion_tokens,
                )
                _finish(result, json_output)
        limits = replace(
            PLAN_LIMITS, wall_clock_s=timeout or AGENTIC_TIMEOUT_S, token_budget=token_budget
        )
        executor = PlanExecutor(
            the_plan,
            root,
            mode=mode.value,
            model=chat_model,
            approver=TerminalApprover(),
            policy=approve.value,
            limits=limits,
            bus=bus,
            task_id=task_id,
            step_timeout_s=step_timeout,
            spent=spent,
        )
        # Recorded like any run, so `localhand runs`, `show` and the dashboard's plan view have it.
        recorded = Task(description=the_plan.goal, workspace=root, id=task_id)
        with RunRecording(recorded, bus, settings=settings):
            result = executor.run()
    except ConfigError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except (ModelError, DraftError) as exc:
        result = PlanResult(
            task_id=task_id,
            goal=goal or "",
            mode=mode.value,
            status="error",
            termination_reason="error",
            output=f"error: {exc}",
            error=str(exc),
        )
        if not json_output:
            err.print(f"[bold red]error:[/] {escape(str(exc))}")
    _finish(result, json_output)


def _draft_approved(the_plan: Plan, yes: bool, view: PlanView) -> bool:
    if yes:
        return True
    view.show_plan(the_plan.to_dict(), title="Drafted plan")
    if not sys.stdin.isatty():
        _err().print(
            "[yellow]The drafted plan was not run: pass --yes to run it without a terminal.[/]"
        )
        return False
    return typer.confirm("Run this plan?", default=False, err=True)


def _finish(result: PlanResult, json_output: bool) -> None:
    if json_output:
        sys.stdout.write(result.to_json() + "\n")
    else:
        sys.stdout.write(result.output + "\n")
    sys.stdout.flush()
    raise typer.Exit(EXIT_CODES[result.status])


def register(app: typer.Typer) -> None:
    """Add the ``plan`` command to ``app``."""
    app.command("plan")(plan)
