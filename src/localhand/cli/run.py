"""``localhand run``: one task, driven by a model through the tool-calling loop."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from localhand.cli.args import (
    APPROVE_POLICIES,
    TIERS,
    Command,
    add_diff_option,
    add_json_option,
    add_limit_options,
    add_mcp_option,
    add_sandbox_option,
    add_view_options,
    exit_code_of,
    number,
    settings_of,
    stderr,
)
from localhand.cli.continuing import (
    add_continue_option,
    add_output_schema_option,
    continued_task,
    schema_in,
)
from localhand.cli.jsonl import add_jsonl_option, current_stream, with_jsonl
from localhand.config.options import LOOP, ModelOptions
from localhand.errors import ConfigError

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace
    from collections.abc import Callable

    from localhand.config.settings import Settings
    from localhand.dashboard import DashboardServer
    from localhand.events import Event
    from localhand.evidence.verify import CommandCheck
    from localhand.run.task import Task
    from localhand.session.continuing import Continuation
    from localhand.session.recording import Serve
    from localhand.store import Store
    from localhand.types import Result


def run(args: Namespace) -> int:
    """Run TASK in the workspace until the model gives a final answer or a guardrail stops it."""
    if args.sandbox != "off":  # bubblewrap's probe runs while the rest of the run loads
        from localhand.safety.box.sandbox import probe_early  # not needed to parse the options

        probe_early()
    from localhand.cancel import Cancellation  # not needed to parse the options
    from localhand.events import EventBus  # not needed to parse the options

    # not needed to parse the options
    from localhand.safety.approval.approver import TerminalApprover
    from localhand.session.door import Session  # not needed to parse the options
    from localhand.store import open_store  # not needed to parse the options

    spec, typed, parent = _task_of(args)
    settings = settings_of(
        args, approve=args.approve, isolate_network=args.no_network, sandbox=args.sandbox
    )
    open_store().close()  # a store it cannot write (a full or read-only disk) is said now
    bus = EventBus()
    stream = current_stream()
    view = None
    if stream is not None:
        bus.subscribe(stream)
    elif not args.json_output:
        view = _view_for(spec, args)
        bus.subscribe(view)
    pause = getattr(view, "paused", None)  # the running line stops while a question is asked
    cancellation = Cancellation()  # a Stop ends the run even while it asks on the terminal
    session = Session(
        spec,
        settings,
        bus=bus,
        approver=TerminalApprover(pause=pause, cancellation=cancellation),
        own_checks=typed,
        continuing=parent,
        output_schema=schema_in(args.output_schema),
        cancellation=cancellation,
        wrap_tools=getattr(view, "watch_edits", None),  # each edit's lines, as it happens
    )
    live = _live_view() if args.serve else None
    with session.recording(serve=live) as recording, session.cancel_on_sigint():
        if stream is not None:
            stream.run_id_of = lambda task_id: recording.run_id
        result = session.run()
    if stream is not None:
        stream.result(result.to_dict())
    elif spec.is_plan:  # a task file that names a plan (or a mode): shown as localhand plan does
        sys.stdout.write((result.to_json() if args.json_output else result.output) + "\n")
        sys.stdout.flush()
    else:
        _print_result(result, args.json_output)  # type: ignore[arg-type]  # the loop's Result
    return exit_code_of(result.status, result.termination_reason)


def _task_of(args: Namespace) -> tuple[Task, tuple[CommandCheck, ...], Continuation | None]:
    """The task the flags describe (over the task file's, when one is given), the checks
    typed with ``--verify`` (the user's say: not gated), and the run ``--continue`` carries
    on."""
    from localhand.evidence.verify import CommandCheck  # not needed to parse the options
    from localhand.paths import working_directory  # a deleted one too (docs/troubleshooting.md)

    workspace = args.workspace
    spec = _task_from(args.task, args.task_file).with_changes(
        workspace=(working_directory() / workspace.expanduser()).resolve() if workspace else None,
        tier=args.tier,
        agentic=args.agentic,
        max_iterations=args.max_iterations,
        timeout_s=args.timeout,
        token_budget=args.token_budget,
        model=args.model,
        backend=args.backend,
    )
    typed = tuple(CommandCheck(v) for v in args.verify or ())
    if typed:
        spec = spec.with_changes(checks=(*spec.checks, *typed))
    parent = None
    if args.continue_run is not None:
        spec, parent = continued_task(args.continue_run, spec, workspace, args.task_file)
    if args.files:  # --file: checked now, read into the first prompt (prompt/attached_files.py)
        spec = _with_files(spec, args.files)
    return spec, typed, parent


def run_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "task", nargs="?", metavar="TASK", help="What to do, in plain words (or use --task-file)."
    )
    parser.add_argument(
        "-w", "--workspace", type=Path, metavar="DIR", help="Directory the agent works in."
    )
    ModelOptions.add_to(parser, LOOP)
    add_diff_option(parser)
    parser.add_argument("--tier", choices=TIERS, help="Complexity: sets the iteration limit.")
    parser.add_argument(
        "--max-iterations",
        type=number(int, 1),
        metavar="N",
        help="Model turns allowed (overrides --tier).",
    )
    add_limit_options(parser, "task")
    parser.add_argument(
        "--verify",
        action="append",
        metavar="COMMAND",
        help="Shell command that must exit 0 for the task to pass. Repeatable. 'auto': the "
        "command the project is tested with (pytest, npm test, cargo test, go test, make test).",
    )
    loop = parser.add_mutually_exclusive_group()
    loop.add_argument(
        "--agentic",
        action="store_const",
        const=True,
        help="Use the tool loop (default: decided from the task).",
    )
    loop.add_argument(
        "--simple",
        dest="agentic",
        action="store_const",
        const=False,
        help="One answer, without tools (default: decided from the task).",
    )
    parser.add_argument(
        "--task-file",
        type=Path,
        metavar="FILE",
        help="JSON or YAML task file; flags override its fields.",
    )
    parser.add_argument(
        "--approve",
        choices=APPROVE_POLICIES,
        help="Which commands need your approval (asked on the terminal; refused when "
        "there is none). Default: dangerous.",
    )
    parser.add_argument(
        "--no-network",
        action="store_true",
        default=None,
        help="Run commands without network access (Linux).",
    )
    add_sandbox_option(parser)
    add_mcp_option(parser)
    parser.add_argument(  # read into the first prompt by localhand.prompt.attached_files
        "--file",
        action="append",
        dest="files",
        metavar="PATH",
        help="Put this workspace file in the first prompt (repeatable; a quoted glob such as "
        "'src/*.py' takes every text file it matches). The files share a cap in tokens; what "
        "does not fit is cut or left out, and you are told.",
    )
    parser.add_argument(
        "--serve", action="store_true", help="Show the run live in the browser (127.0.0.1)."
    )
    add_json_option(parser, "Print only the Result, as one JSON line.")
    add_view_options(parser)
    add_jsonl_option(parser)
    add_continue_option(parser)
    add_output_schema_option(parser)


COMMANDS = {"run": Command(with_jsonl(run), run_arguments)}


def _task_from(description: str | None, task_file: Path | None) -> Task:
    from localhand.run.task import Task  # not needed to parse the options

    if task_file is not None:
        from localhand.taskfile import load_task_file  # not needed to parse the options

        task = load_task_file(task_file)
        return task.with_changes(description=description)
    if not description or not description.strip():
        raise ConfigError('say what to do: localhand run "TASK", or --task-file FILE')
    from localhand.paths import working_directory  # not needed to parse the options

    return Task(description=description, workspace=working_directory())


def _with_files(spec: Task, patterns: list[str]) -> Task:
    """The task with the ``--file`` files attached; the person is told what a glob left out
    and what the cap will cut."""
    from rich.markup import escape  # rich loads only when used

    from localhand.prompt.attached_files import announce, expand  # not needed to parse the options

    if spec.is_plan:
        raise ConfigError("--file is for a task the model carries out, not a plan's steps")
    said: list[str] = []
    files = expand(patterns, spec.workspace, said.append)
    for line in [*said, *announce(spec.workspace, files)]:
        stderr().print(f"[yellow]note:[/] {escape(line)}")
    return spec.with_changes(context_files=(*spec.context_files, *files))


def _view_for(spec: Task, args: Namespace) -> Callable[[Event], None]:
    """What shows the run on the terminal, as ``-v``, ``-q`` and ``--show-thinking`` ask:
    plan mode's view for a plan task."""
    if spec.is_plan:
        from localhand.cli.plan_view import PlanView  # not needed to parse the options

        return PlanView(verbose=args.verbose, quiet=args.quiet)
    from localhand.cli.view import TerminalView  # not needed to parse the options

    return TerminalView(verbose=args.verbose, quiet=args.quiet, show_thinking=args.show_thinking)


def _live_view() -> Serve:
    """``--serve``: the dashboard, showing the run's store (checked before the run opens)."""
    try:
        from localhand.dashboard import start_dashboard  # not needed to parse the options
    except ImportError as exc:
        raise ConfigError(
            f"--serve needs FastAPI and uvicorn ({exc.name} is missing): "
            "pip install 'localhand[dashboard]'"
        ) from None

    def serve(store: Store, settings: Settings | None) -> DashboardServer:
        return start_dashboard(store, port=8765, settings=settings, port_fallback=True)

    return serve


def _print_result(result: Result, json_output: bool) -> None:
    # The simple path has already streamed its answer to stdout as it arrived (TerminalView's
    # on_answer_delta), so only the tool loop's answer is printed here.
    streamed = result.routing is not None and result.routing.get("agentic") is False
    if json_output:
        sys.stdout.write(result.to_json() + "\n")
    elif result.output and not streamed:
        from localhand.cli.lines import answer_width, wrap  # not needed to parse the options
        from localhand.cli.printable import printable  # the model's text: its escapes written out

        text = wrap(printable(result.output.rstrip()), answer_width(sys.stdout))
        sys.stdout.write(text + "\n")  # on a terminal, wrapped at words
    sys.stdout.flush()
