"""Command line: wiring only. Exit codes: 0 pass, 1 partial_pass or fail, 2 usage,
configuration or a model server that cannot serve the run (status ``error``), 3 unverified
(a final answer with no checks to show it right), 130 Ctrl-C."""

from __future__ import annotations

import os
import sys
from importlib import import_module
from pathlib import Path

from localhand._version import __version__
from localhand.cli.args import Command, Parser, exit_code, fail, print_error, stderr
from localhand.errors import ConfigError

# Only the invoked command's module is imported, and only its options are built: each command
# imports its implementation when it runs, so that `localhand run` does not pay for plan mode,
# batches or the dashboard (see "Start-up" in docs/benchmarks.md). test_startup_imports.py
# guards it.
COMMAND_MODULES = {
    "run": "localhand.cli.run",
    "runs": "localhand.cli.store",
    "show": "localhand.cli.store",
    "replay": "localhand.cli.store",
    "undo": "localhand.cli.undo",
    "serve": "localhand.cli.store",
    "plan": "localhand.cli.plan",
    "batch": "localhand.cli.batch",
    "eval": "localhand.cli.eval",
    "mcp": "localhand.cli.mcp",
    "acp": "localhand.cli.acp",
    "trust": "localhand.cli.trust",
    "skills": "localhand.cli.skills",
    "models": "localhand.cli.models",
    "doctor": "localhand.cli.doctor",
    "config": "localhand.cli.config",
    "completion": "localhand.cli.completion",
}
DESCRIPTION = "Make local LLMs actually do things: a guarded tool-calling agent."


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point: parse ``argv`` (default: ``sys.argv[1:]``), run the
    command, return its exit code. Ctrl-C outside a run (which handles it) ends quietly."""
    args = sys.argv[1:] if argv is None else argv
    try:
        if (gone := _deleted_directory()) and args[:1] != ["run"]:  # run records why
            fail(f"the current directory {gone} was deleted; cd to a folder that exists")
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
    except ConfigError as exc:  # any command's: a setting, file or value to fix, no traceback
        print_error(str(exc))
        return 2
    except KeyboardInterrupt:
        stderr().print("[yellow]cancelled[/]")
        return 130
    except SystemExit as exc:
        return exit_code(exc)


def _deleted_directory() -> Path | None:
    """The working directory when it has been deleted (localhand then leaves it); else None."""
    try:
        os.getcwd()
    except FileNotFoundError:
        from localhand.paths import leave_deleted_directory  # only then: start-up stays lean

        return leave_deleted_directory()
    return None


def invoke(name: str, args: list[str]) -> int:
    """Run command ``name`` with ``args``, its options; return the exit code."""
    command, parser = command_parser(name)
    return command.run(parser.parse_args(args))


def command_parser(name: str) -> tuple[Command, Parser]:
    """Command ``name`` and the parser of its options: only its own options are built."""
    command = command_named(name)
    parser = Parser(prog=f"localhand {name}", description=_doc(command))
    command.arguments(parser)
    return command, parser


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

    parser.add_argument("--version", action="version", version=f"localhand {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        commands.add_parser(name, help=_doc(command_named(name)).split("\n")[0])
    return parser


def _doc(command: Command) -> str:
    return "\n".join(line.strip() for line in (command.run.__doc__ or "").strip().splitlines())
