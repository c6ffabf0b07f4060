"""``localhand plan``: run a plan file, or a plan the model drafts from a goal. Wiring only.

``COMMANDS`` adds the command to the main CLI; ``python -m localhand.cli.plan plan ...`` runs
the main CLI too. Exit codes as for ``run``: 0 pass, 1 partial_pass or fail, 2 usage,
configuration or a model server that cannot serve the plan (status ``error``).
"""

from __future__ import annotations

import sys
import uuid
from argparse import ArgumentParser
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.cli.args import (
    APPROVE_POLICIES,
    EXIT_CODES,
    Command,
    add_json_option,
    add_model_options,
    add_sandbox_option,
    fail,
    number,
    print_error,
    stderr,
)
from localhand.errors import ConfigError, ModelError
from localhand.plan.runstep import DEFAULT_STEP_TIMEOUT_S

if TYPE_CHECKING:  # plan mode loads when the command runs: the other commands start faster
    from localhand.config import Settings
    from localhand.models.base import ChatModel
    from localhand.plan.model import Plan
    from localhand.plan.result import PlanResult
    from localhand.plan.view import PlanView

MODES = ("teacher", "planner", "agentic")  # localhand.plan.executor.MODES
DEFAULT_MODE = "planner"  # localhand.config.Settings.plan_mode, for the help


def build_model(settings: Settings, on_warning: Any = None) -> ChatModel:
    """``localhand.run.runner.build_model``, imported when a plan needs a model."""
    from localhand.run.runner import build_model

    return build_model(settings, on_warning=on_warning)


def plan(
    *,
    file: Path | None,
    goal: str | None,
    mode: str | None,
    workspace: Path | None,
    model: str | None,
    backend: str | None,
    host: str | None,
    max_reply_tokens: int | None,
    approve: str,
    sandbox: str | None,
    yes: bool,
    timeout: float | None,
    step_timeout: float,
    token_budget: int | None,
    json_output: bool,
) -> int:
    """Run a plan of shell commands step by step; in agentic mode, repair it when a step fails."""
    # The docstring is the command's help. Without --mode (``mode`` None), the settings'
    # plan_mode says: LOCALHAND_PLAN_MODE, else [plan] default_mode, else planner.
    from localhand.config import distrusting, load_settings
    from localhand.events import EventBus, Warning
    from localhand.plan.draft import DraftError, draft_plan
    from localhand.plan.executor import PLAN_LIMITS, PlanExecutor
    from localhand.plan.model import load_plan
    from localhand.plan.result import PlanResult, build_result
    from localhand.plan.view import PlanView
    from localhand.run.recording import RunRecording
    from localhand.run.runner import sandbox_of
    from localhand.run.task import AGENTIC_TIMEOUT_S, Task
    from localhand.safety.approval import TerminalApprover
    from localhand.safety.own_env import forget_secrets

    err = stderr()
    task_id = uuid.uuid4().hex[:12]
    bus = EventBus()
    view = PlanView(err)
    chosen = mode or DEFAULT_MODE  # until the settings are read
    if not json_output:
        bus.subscribe(view)
    try:
        if (file is None) == (goal is None):
            raise ConfigError("give a plan FILE or --goal TEXT, not both and not neither")
        root = (workspace or Path(".")).expanduser().resolve()
        if not root.is_dir():
            raise ConfigError(f"workspace {root} is not a directory; create it or pass --workspace")
        settings = load_settings().with_overrides(
            model=model,
            backend=backend,
            host=host,
            max_reply_tokens=max_reply_tokens,
            sandbox=sandbox,
            plan_mode=mode,
        )
        chosen = settings.plan_mode
        forget_secrets()  # settings read: no secret stays where a command could read it
        chat_model = None
        if goal is not None or chosen == "agentic":
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
                    mode=chosen,
                    termination_reason="not_approved",
                    message="the drafted plan was not approved (pass --yes to run it)",
                    model_used=chat_model.name,
                    tokens_in=spent.prompt_tokens,
                    tokens_out=spent.completion_tokens,
                )
                return _finish(result, json_output)
        limits = replace(
            PLAN_LIMITS, wall_clock_s=timeout or AGENTIC_TIMEOUT_S, token_budget=token_budget
        )
        executor = PlanExecutor(
            the_plan,
            root,
            mode=chosen,  # type: ignore[arg-type]  # one of MODES, checked with the settings
            model=chat_model,
            approver=TerminalApprover(),
            policy=approve,
            limits=limits,
            bus=bus,
            task_id=task_id,
            step_timeout_s=step_timeout,
            spent=spent,
        )
        # Recorded like any run, so `localhand runs`, `show` and the dashboard's plan view have it.
        recorded = Task(description=the_plan.goal, workspace=root, id=task_id)

        def warn(message: str) -> None:
            bus.emit(Warning(task_id=task_id, message=message))

        settings, distrusted = distrusting(settings, root)
        for message in distrusted:
            warn(message)

        with RunRecording(recorded, bus, settings=settings), sandbox_of(settings, warn):
            result = executor.run()
    except ConfigError as exc:
        fail(str(exc))
    except (ModelError, DraftError) as exc:
        result = PlanResult(
            task_id=task_id,
            goal=goal or "",
            mode=chosen,
            status="error",
            termination_reason="error",
            output=f"error: {exc}",
            error=str(exc),
        )
        if not json_output:
            print_error(str(exc))
    return _finish(result, json_output)


def _draft_approved(the_plan: Plan, yes: bool, view: PlanView) -> bool:
    if yes:
        return True
    view.show_plan(the_plan.to_dict(), title="Drafted plan")
    if not sys.stdin.isatty():
        stderr().print(
            "[yellow]The drafted plan was not run: pass --yes to run it without a terminal.[/]"
        )
        return False
    sys.stderr.write("Run this plan? [y/N]: ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _finish(result: PlanResult, json_output: bool) -> int:
    if json_output:
        sys.stdout.write(result.to_json() + "\n")
    else:
        sys.stdout.write(result.output + "\n")
    sys.stdout.flush()
    return EXIT_CODES[result.status]


def plan_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "file",
        nargs="?",
        type=Path,
        metavar="FILE",
        help="Plan file, JSON or YAML (or use --goal).",
    )
    parser.add_argument("--goal", metavar="TEXT", help="Let the model draft a plan for this goal.")
    parser.add_argument(
        "--mode",
        choices=MODES,
        help="teacher: ask before each step; planner: stop at the first failure; "
        "agentic: diagnose failures and repair the plan (default: LOCALHAND_PLAN_MODE, "
        f"else [plan] default_mode in localhand.toml, else {DEFAULT_MODE}).",
    )
    parser.add_argument(
        "-w", "--workspace", type=Path, metavar="DIR", help="Directory the steps run in."
    )
    add_model_options(parser)
    parser.add_argument(
        "--approve",
        choices=APPROVE_POLICIES,
        default="dangerous",
        help="Which steps need approval before they run (default: %(default)s).",
    )
    add_sandbox_option(parser)
    parser.add_argument(
        "-y", "--yes", action="store_true", help="Run a drafted plan without asking first."
    )
    parser.add_argument(
        "--timeout",
        type=number(float, 1),
        metavar="SECONDS",
        help="Wall clock for the whole plan, in seconds.",
    )
    parser.add_argument(
        "--step-timeout",
        type=number(float, 1),
        default=DEFAULT_STEP_TIMEOUT_S,
        metavar="SECONDS",
        help="Default time limit of one step, in seconds (default: %(default)g).",
    )
    parser.add_argument(
        "--token-budget",
        type=number(int, 1),
        metavar="N",
        help="Tokens (prompt + reply) the plan may spend.",
    )
    add_json_option(parser, "Print only the Plan Result, as one JSON line.")


COMMANDS = {"plan": Command(plan, plan_arguments)}

if __name__ == "__main__":
    from localhand.cli import main

    raise SystemExit(main())
