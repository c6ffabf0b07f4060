"""What the commands share: the parser, typed arguments, the model flags and the way out.

The command line is the standard library's ``argparse``: it starts in about 12 ms, where typer
(click and a pydantic adapter per parameter) took about 150 ms of ``localhand run``'s budget of
0.3 s to its first request. The choices are spelled here (the model's and the approval's in
``localhand.config.options``), not imported, so that parsing loads nothing of a run's;
tests/cli/test_cli_args.py keeps them equal to the modules that use them.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from localhand.config.options import APPROVE_POLICIES as APPROVE_POLICIES
from localhand.config.options import BACKENDS as BACKENDS
from localhand.config.options import ModelOptions
from localhand.config.options import number as number

if TYPE_CHECKING:
    from rich.console import Console

    from localhand.config.settings import Settings

SANDBOX_SETTINGS = ("workspace-write", "read-only", "off", "required")  # safety.sandbox_table
TIERS = ("trivial", "standard", "complex")  # localhand.types.TIER_ITERATIONS
EXIT_CODES = {"pass": 0, "partial_pass": 1, "fail": 1, "error": 2, "unverified": 3}
"""A status's exit code; ``unverified`` (no checks, so no evidence) has its own, never 0."""
STATUS_COLOURS = {
    "pass": "green",
    "unverified": "cyan",
    "partial_pass": "yellow",
    "running": "blue",
    "interrupted": "magenta",
}
"""Each status's colour on a terminal, a Result's or a stored run's; any other is red."""
CANCELLED_EXIT = 130
"""A run stopped by Ctrl-C (or another cancel) exits as shells expect of an interrupted
program: 128 + SIGINT. Its Result is recorded first, whatever its status."""


def exit_code_of(status: str, termination_reason: str) -> int:
    """The exit code of a finished run: 130 when it was cancelled once it had started, else its
    status's (a run refused before it started, e.g. a verify command nobody approved, is an
    ``error``: 2)."""
    if termination_reason == "cancelled" and status != "error":
        return CANCELLED_EXIT
    return EXIT_CODES[status]


class Command(NamedTuple):
    """One command: ``arguments`` adds its options to a parser; ``run`` is called with the
    parsed options (the namespace) and returns the exit code. The first line of ``run``'s
    docstring is the command's line in ``localhand --help``."""

    run: Callable[[argparse.Namespace], int]
    arguments: Callable[[argparse.ArgumentParser], None]


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that takes no abbreviated options (click took none either) and
    reports a usage error in two lines: what is wrong, and where the help is. Exit code 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        message += self.did_you_mean(message)
        self.exit(2, f"{self.prog}: error: {message}\nTry '{self.prog} --help' for help.\n")

    def did_you_mean(self, message: str) -> str:
        """`` (did you mean --model?)`` for a mistyped option, command or choice, else ``""``."""
        if found := re.search(r"unrecognized arguments: (.*)", message):
            words = [w.split("=")[0] for w in found[1].split() if w.startswith("-")]
            offered = [name for action in self._actions for name in action.option_strings]
        elif found := re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)", message):
            words, offered = [found[1]], re.findall(r"'(.*?)'", found[2])
        else:
            return ""
        import difflib  # only for a mistyped word: start-up stays lean

        close = difflib.get_close_matches(words[0], offered, n=1) if words else []
        return f" (did you mean {close[0]}?)" if close else ""


def add_sandbox_option(parser: argparse.ArgumentParser) -> None:
    """``--sandbox``, for every command that runs commands a model wrote or influenced."""
    parser.add_argument(
        "--sandbox",
        choices=SANDBOX_SETTINGS,
        help="Where commands run (Linux, bubblewrap): workspace-write (default: the workspace "
        "writable, the rest read-only, $HOME hidden), read-only, off, or required "
        "(workspace-write, and refuse to run where no sandbox can be had).",
    )


EXECUTORS = ("local", "ray")  # localhand.batch.driver.EXECUTORS


def add_pool_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``-j``, ``--executor`` and ``--slots``: how many of ``what`` (tasks, runs) share the
    pool of --host servers, for the commands that run many (batch, eval)."""
    parser.add_argument(
        "-j",
        "--concurrency",
        type=number(int, 1),
        metavar="N",
        help=f"{what} at once (default: the pool's slots; Ray: all, Ray queues them).",
    )
    parser.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="Threads here, or Ray tasks on a Ray cluster (default: %(default)s).",
    )
    parser.add_argument(
        "--slots",
        type=number(int, 1),
        metavar="N",
        help="Parallel slots of each --host (OLLAMA_NUM_PARALLEL, llama-server's --parallel; "
        "default: what the server publishes, else 1).",
    )


def add_limit_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``--timeout`` and ``--token-budget`` for the whole of ``what`` (a task, a plan)."""
    parser.add_argument(
        "--timeout",
        type=number(float, 1),
        metavar="SECONDS",
        help=f"Wall clock for the whole {what}, in seconds.",
    )
    parser.add_argument(
        "--token-budget",
        type=number(int, 1),
        metavar="N",
        help=f"Tokens (prompt + reply) the {what} may spend.",
    )


def add_mcp_option(parser: argparse.ArgumentParser) -> None:
    """``--mcp-config FILE``, for every command whose model gets tools."""
    parser.add_argument(
        "--mcp-config",
        action="append",
        type=Path,
        metavar="FILE",
        help="Offer the tools of the MCP servers in FILE (the mcpServers JSON of Claude "
        "Desktop, Cursor and Goose), besides [mcp.servers.NAME] in localhand.toml. Repeatable.",
    )


def add_door_options(parser: argparse.ArgumentParser, approve_help: str) -> None:
    """What a door serving runs to a client (``mcp``, ``acp``) takes: the model flags,
    ``--approve`` (``approve_help``: who is asked), ``--sandbox``, ``--mcp-config``, ``--db``."""
    ModelOptions.add_to(parser)
    parser.add_argument("--approve", choices=APPROVE_POLICIES, help=approve_help)
    add_sandbox_option(parser)
    add_mcp_option(parser)
    add_db_option(parser)


def add_json_option(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--json", action=_JsonOutput, dest="json_output", help=help)


class _JsonOutput(argparse._StoreTrueAction):
    """``--json``: output for a program, so nobody is asked about a changed file
    (``localhand.safety.trust.store.never_ask``); the file is refused instead."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        from localhand.safety.trust.store import never_ask  # only when --json is given

        never_ask()
        super().__call__(parser, namespace, values, option)


def add_diff_option(parser: argparse.ArgumentParser) -> None:
    """``--diff``: print the run's whole diff after its end-of-run summary. What it asks is
    kept here (``diff_requested``), not among the parsed options, so the live view reads it
    and a command's function needs no ``diff`` keyword to offer it."""
    _diff_requested[0] = False  # a parser is built per command: one run's flag, not the last
    parser.add_argument(
        "--diff",
        action=_DiffRequested,
        nargs=0,
        default=argparse.SUPPRESS,
        help="Print the whole diff of what the run changed at its end (a summary of files "
        "and +/- lines is printed anyway).",
    )


def diff_requested() -> bool:
    """Whether this command line asked for ``--diff``."""
    return _diff_requested[0]


_diff_requested = [False]


class _DiffRequested(argparse.Action):
    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        _diff_requested[0] = True


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        type=Path,
        metavar="FILE",
        help="Run store (default: LOCALHAND_DB or the user data directory).",
    )


def stderr() -> Console:
    """Standard error, through Rich: ``localhand.session.recording.stderr``, imported when first
    printed to (parsing loads nothing of localhand's, see the module docstring)."""
    from localhand.session.recording import stderr as console  # not needed to parse the options

    return console()


def console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    """A Rich console for a command's own output, numbers and paths not highlighted."""
    from rich.console import Console  # rich loads only when used

    return Console(stderr=stderr, highlight=False, soft_wrap=soft_wrap)


def print_error(message: str) -> None:
    """``error: MESSAGE`` on standard error: a message a person can act on, no traceback."""
    from rich.markup import escape  # rich loads only when used

    stderr().print(f"[bold red]error:[/] {escape(message)}")


def inert(text: str) -> str:
    """``text`` (a model, a command or a file wrote it) with its control characters written
    out, as approvals show commands (``localhand.safety.approval.approver.escape``)."""
    from localhand.safety.approval.approver import escape  # not needed to parse the options

    return escape(text)


def fail(message: str) -> NoReturn:
    """Print ``message`` as an error and end the command with exit code 2 (usage or
    configuration)."""
    print_error(message)
    raise SystemExit(2)


def settings_of(
    args: argparse.Namespace,
    options: ModelOptions | None = None,
    *,
    forget: bool = True,
    **overrides: Any,
) -> Settings:
    """The settings a command runs with: the layers of ``localhand.config.settings``, the model
    flags over them (``options``, default: those parsed into ``args``), then ``overrides``
    (``None``: not given) and the servers of ``--mcp-config``, which are read before secrets go.
    Then, unless ``forget`` is false, localhand forgets its secrets: none stays where a command
    could read it. A wrong setting is a ``ConfigError``: exit code 2 (``cli.main``)."""
    from localhand.config.settings import load_settings, with_mcp_config  # not needed to parse
    from localhand.safety.secrets.own_env import forget_secrets  # not needed to parse

    flags = ModelOptions.from_args(args) if options is None else options
    settings = flags.applied_to(load_settings()).with_overrides(**overrides)
    settings = with_mcp_config(settings, getattr(args, "mcp_config", None) or [])
    if forget:
        forget_secrets()
    return settings


def exit_code(exc: SystemExit) -> int:
    """The exit code that ``exc`` carries, as the interpreter would turn it into one."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    sys.stderr.write(f"{exc.code}\n")
    return 1


def add_view_options(parser: argparse.ArgumentParser, *, thinking: bool = True) -> None:
    """``-v``/``--verbose`` and ``-q``/``--quiet`` (one or the other) and, where a model
    thinks as the run goes (``thinking``), ``--show-thinking``: how much the live view
    prints on standard error."""
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="Also print the model's profile and sampling line and the workspace.",
    )
    loudness.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="Print only the answer (stdout) and the final status (stderr).",
    )
    if thinking:
        parser.add_argument(
            "--show-thinking",
            action="store_true",
            help="Show the model's thinking, dimmed and folded to a few lines (default: off).",
        )
