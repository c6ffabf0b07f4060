"""Command line: wiring only. Exit codes: 0 pass, 1 partial_pass or fail, 2 usage,
configuration or a model server that cannot serve the run (status ``error``), 130 Ctrl-C."""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.cli_args import (
    APPROVE_POLICIES,
    EXIT_CODES,
    TIERS,
    Command,
    Parser,
    add_json_option,
    add_model_options,
    add_sandbox_option,
    add_watch_option,
    exit_code,
    fail,
    number,
    stderr,
)
from localhand.errors import ConfigError

if TYPE_CHECKING:
    from argparse import ArgumentParser

    from localhand.task import Task
    from localhand.types import Result

# Only the invoked command's module is imported, and only its options are built: each command
# imports its implementation when it runs, so that `localhand run` does not pay for plan mode,
# batches or the dashboard (see "Start-up" in docs/benchmarks.md). test_startup_imports.py
# guards it.
COMMAND_MODULES = {
    "run": "localhand.cli",
    "runs": "localhand.cli_store",
    "show": "localhand.cli_store",
    "replay": "localhand.cli_store",
    "undo": "localhand.cli_undo",
    "serve": "localhand.cli_store",
    "plan": "localhand.cli_plan",
    "batch": "localhand.cli_batch",
}
DESCRIPTION = "Make local LLMs actually do things: a guarded tool-calling agent."


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point: parse ``argv`` (default: ``sys.argv[1:]``), run the
    command, return its exit code. Ctrl-C outside a run (which handles it) ends quietly."""
    args = sys.argv[1:] if argv is None else argv
    try:
        if args and args[0] in COMMAND_MODULES:
            return invoke(args[0], args[1:])
        parser = root_parser()
        if not args:
            parser.print_help()
            return 2
        if args[0].startswith("-") and args[0] not in ("-h", "--help", "--version"):
            parser.error(f"unrecognized arguments: {args[0]} (options go after the command)")
        parser.parse_args(args)  # --help, --version, or an unknown command: all exit
        return 2
    except KeyboardInterrupt:
        stderr().print("[yellow]cancelled[/]")
        return 130
    except SystemExit as exc:
        return exit_code(exc)


def invoke(name: str, args: list[str]) -> int:
    """Run command ``name`` with ``args``, its options; return the exit code."""
    command, options = parse_command(name, args)
    return command.run(**options)


def parse_command(name: str, args: list[str]) -> tuple[Command, dict[str, Any]]:
    """Command ``name`` and its options parsed from ``args``. Only its own options are built.
    A usage error prints what is wrong on stderr and raises ``SystemExit(2)``."""
    command = command_named(name)
    parser = Parser(prog=f"localhand {name}", description=_doc(command))
    command.arguments(parser)
    return command, vars(parser.parse_args(args))


def command_named(name: str) -> Command:
    commands: dict[str, Command] = import_module(COMMAND_MODULES[name]).COMMANDS
    return commands[name]


def root_parser() -> Parser:
    """``localhand`` itself: lists the commands (their options are built when one runs)."""
    parser = Parser(
        prog="localhand",
        description=DESCRIPTION,
        epilog="Run 'localhand COMMAND --help' for the options of a command.",
    )
    from localhand import __version__

    parser.add_argument("--version", action="version", version=f"localhand {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        commands.add_parser(name, help=_doc(command_named(name)).split("\n")[0])
    return parser


def _doc(command: Command) -> str:
    return "\n".join(line.strip() for line in (command.run.__doc__ or "").strip().splitlines())


def run(
    *,
    task: str | None,
    workspace: Path | None,
    model: str | None,
    backend: str | None,
    host: str | None,
    max_reply_tokens: int | None,
    watch_replies: bool | None,
    tier: str | None,
    max_iterations: int | None,
    timeout: float | None,
    token_budget: int | None,
    verify: list[str] | None,
    agentic: bool | None,
    task_file: Path | None,
    approve: str | None,
    no_network: bool | None,
    sandbox: str | None,
    serve: bool,
    json_output: bool,
) -> int:
    """Run TASK in the workspace until the model gives a final answer or a guardrail stops it."""
    from localhand.config import load_settings
    from localhand.events import EventBus
    from localhand.recording import RunRecording
    from localhand.runner import run_task
    from localhand.safety.approval import TerminalApprover
    from localhand.safety.own_env import forget_secrets
    from localhand.verify import CommandCheck

    try:
        spec = _task_from(task, task_file).with_changes(
            workspace=workspace.expanduser().resolve() if workspace else None,
            tier=tier,
            agentic=agentic,
            max_iterations=max_iterations,
            timeout_s=timeout,
            token_budget=token_budget,
            model=model,
            backend=backend,
        )
        if verify:
            spec = spec.with_changes(checks=(*spec.checks, *(CommandCheck(v) for v in verify)))
        settings = load_settings().with_overrides(
            host=host,
            max_reply_tokens=max_reply_tokens,
            watch_replies=watch_replies,
            approve=approve,
            isolate_network=no_network,
            sandbox=sandbox,
        )
        forget_secrets()  # settings read: no secret stays where a command could read it
        bus = EventBus()
        if not json_output:
            from localhand.view import TerminalView

            bus.subscribe(TerminalView())
        with RunRecording(spec, bus, settings=settings, serve=serve) as recording:
            result = run_task(
                spec, settings, bus=bus, store=recording.store, approver=TerminalApprover()
            )
    except ConfigError as exc:
        fail(str(exc))
    _print_result(result, json_output)
    return EXIT_CODES[result.status]


def run_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "task", nargs="?", metavar="TASK", help="What to do, in plain words (or use --task-file)."
    )
    parser.add_argument(
        "-w", "--workspace", type=Path, metavar="DIR", help="Directory the agent works in."
    )
    add_model_options(parser)
    add_watch_option(parser)
    parser.add_argument("--tier", choices=TIERS, help="Complexity: sets the iteration limit.")
    parser.add_argument(
        "--max-iterations",
        type=number(int, 1),
        metavar="N",
        help="Model turns allowed (overrides --tier).",
    )
    parser.add_argument(
        "--timeout",
        type=number(float, 1),
        metavar="SECONDS",
        help="Wall clock for the whole task, in seconds.",
    )
    parser.add_argument(
        "--token-budget",
        type=number(int, 1),
        metavar="N",
        help="Tokens (prompt + reply) the task may spend.",
    )
    parser.add_argument(
        "--verify",
        action="append",
        metavar="COMMAND",
        help="Shell command that must exit 0 for the task to pass. Repeatable.",
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
    parser.add_argument(
        "--serve", action="store_true", help="Show the run live in the browser (127.0.0.1)."
    )
    add_json_option(parser, "Print only the Result, as one JSON line.")


COMMANDS = {"run": Command(run, run_arguments)}


def _task_from(description: str | None, task_file: Path | None) -> Task:
    from localhand.task import Task

    if task_file is not None:
        from localhand.taskfile import load_task_file

        task = load_task_file(task_file)
        return task.with_changes(description=description)
    if not description or not description.strip():
        raise ConfigError('say what to do: localhand run "TASK", or --task-file FILE')
    return Task(description=description, workspace=Path.cwd())


def _print_result(result: Result, json_output: bool) -> None:
    # The simple path has already streamed its answer to stdout as it arrived (TerminalView's
    # on_answer_delta), so only the tool loop's answer is printed here.
    streamed = result.routing is not None and result.routing.get("agentic") is False
    if json_output:
        sys.stdout.write(result.to_json() + "\n")
    elif result.output and not streamed:
        from localhand.view import printable  # the model's text: its escapes written out

        sys.stdout.write(printable(result.output.rstrip()) + "\n")
    sys.stdout.flush()
