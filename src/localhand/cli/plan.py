"""``localhand plan``: run a plan file, or a plan the model drafts from a goal. Wiring only.

``COMMANDS`` adds the command to the main CLI; ``python -m localhand.cli.plan plan ...`` runs
the main CLI too. Exit codes as for ``run``: 0 pass, 1 partial_pass or fail, 2 usage,
configuration or a model server that cannot serve the plan (status ``error``).
"""

from __future__ import annotations

import sys
import uuid
from argparse import ArgumentParser, Namespace
from pathlib import Path
from typing import TYPE_CHECKING, cast

from localhand.cli.args import (
    APPROVE_POLICIES,
    Command,
    add_json_option,
    add_limit_options,
    add_sandbox_option,
    add_view_options,
    exit_code_of,
    number,
    settings_of,
    stderr,
)
from localhand.cli.jsonl import add_jsonl_option, current_stream, with_jsonl
from localhand.config.options import PLAN_MODES as MODES
from localhand.config.options import ModelOptions
from localhand.errors import ConfigError
from localhand.plan.runstep import DEFAULT_STEP_TIMEOUT_S

if TYPE_CHECKING:  # plan mode loads when the command runs: the other commands start faster
    from localhand.cli.plan_view import PlanView
    from localhand.plan.model import Plan
    from localhand.plan.result import PlanResult

DEFAULT_MODE = "planner"  # localhand.config.settings.Settings.plan_mode, for the help


def plan(args: Namespace) -> int:
    """Run a plan of shell commands step by step; in agentic mode, repair it when a step fails."""
    # The docstring is the command's help. Without --mode (``args.mode`` None), the plan file's
    # mode says, else LOCALHAND_PLAN_MODE, else [plan] default_mode, else planner.
    from localhand.cancel import Cancellation
    from localhand.cli.plan_view import PlanView  # not needed to parse the options
    from localhand.events import EventBus  # not needed to parse the options
    from localhand.plan.model import load_plan  # not needed to parse the options
    from localhand.run.task import Task  # not needed to parse the options

    # not needed to parse the options
    from localhand.safety.approval.approver import TerminalApprover
    from localhand.session.door import Session  # not needed to parse the options
    from localhand.session.plans import PlanRequest  # not needed to parse the options

    task_id = uuid.uuid4().hex[:12]
    bus = EventBus()
    view = PlanView(verbose=args.verbose, quiet=args.quiet)
    stream = current_stream()
    if stream is not None:
        bus.subscribe(stream)
    elif not args.json_output:
        bus.subscribe(view)
    file, goal = args.file, args.goal
    if (file is None) == (goal is None):
        raise ConfigError("give a plan FILE or --goal TEXT, not both and not neither")
    root = (args.workspace or Path(".")).expanduser().resolve()
    if not root.is_dir():
        raise ConfigError(f"workspace {root} is not a directory; create it or pass --workspace")
    settings = settings_of(args, sandbox=args.sandbox)
    the_plan = None if file is None else load_plan(file, root)
    # Recorded like any run, so `localhand runs`, `show` and the dashboard's plan view have it.
    described = the_plan.goal if the_plan is not None else str(goal)
    recorded = Task(
        description=described,
        workspace=root,
        id=task_id,
        mode=args.mode,
        timeout_s=args.timeout,
        token_budget=args.token_budget,
    )
    request = PlanRequest(
        the_plan,
        policy=args.approve,
        approve_draft=lambda drafted: _draft_approved(drafted, args.yes, view),
        step_timeout_s=args.step_timeout,
    )
    cancellation = Cancellation()  # a Stop ends the plan even while a step's question waits
    session = Session(
        recorded,
        settings,
        bus=bus,
        approver=TerminalApprover(cancellation=cancellation),
        plan=request,
        cancellation=cancellation,
    )
    with session.recording() as recording, session.cancel_on_sigint():
        if stream is not None:
            stream.run_id_of = lambda task_id: recording.run_id
        result = cast("PlanResult", session.run())
    if stream is not None:
        stream.result(result.to_dict())
    else:
        sys.stdout.write((result.to_json() if args.json_output else result.output) + "\n")
        sys.stdout.flush()
    return exit_code_of(result.status, result.termination_reason)


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
        "agentic: diagnose failures and repair the plan. Chosen in this order: --mode, the "
        "plan file's own 'mode:', LOCALHAND_PLAN_MODE, [plan] default_mode in localhand.toml, "
        f"else {DEFAULT_MODE}.",
    )
    parser.add_argument(
        "-w", "--workspace", type=Path, metavar="DIR", help="Directory the steps run in."
    )
    ModelOptions.add_to(parser)
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
    add_limit_options(parser, "plan")
    parser.add_argument(
        "--step-timeout",
        type=number(float, 1),
        default=DEFAULT_STEP_TIMEOUT_S,
        metavar="SECONDS",
        help="Default time limit of one step, in seconds (default: %(default)g).",
    )
    add_json_option(parser, "Print only the Plan Result, as one JSON line.")
    add_view_options(parser, thinking=False)
    add_jsonl_option(parser)


COMMANDS = {"plan": Command(with_jsonl(plan), plan_arguments)}

if __name__ == "__main__":
    from localhand.cli import main

    raise SystemExit(main())
