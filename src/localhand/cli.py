"""Command line: wiring only. Exit codes: 0 pass, 1 partial_pass or fail, 2 usage,
configuration or a model server that cannot serve the run (status ``error``)."""

from __future__ import annotations

import copy
import sys
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from localhand.cli_batch import register as register_batch
from localhand.cli_plan import register as register_plan
from localhand.cli_store import register
from localhand.errors import ConfigError

if TYPE_CHECKING:
    from rich.console import Console

    from localhand.task import Task
    from localhand.types import Result

# Only what every command needs is imported here: each command imports its own implementation
# when it runs, so that `localhand run` does not pay for plan mode, batches or the dashboard
# (see "Start-up" in docs/benchmarks.md). test_startup_imports.py guards it.

app = typer.Typer(
    name="localhand",
    help="Make local LLMs actually do things: a guarded tool-calling agent.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@cache
def _err() -> Console:
    """Standard error, through Rich (not imported until something is printed)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


EXIT_CODES = {"pass": 0, "partial_pass": 1, "fail": 1, "error": 2}


class Backend(StrEnum):
    auto = "auto"
    ollama = "ollama"
    openai = "openai"
    embedded = "embedded"


class Approve(StrEnum):
    never = "never"
    dangerous = "dangerous"
    always = "always"


class Tier(StrEnum):
    trivial = "trivial"
    standard = "standard"
    complex = "complex"


@app.callback()
def _root() -> None:
    """localhand drives a local model through tools until the task is done, safely."""


@app.command()
def run(
    task: Annotated[
        str | None, typer.Argument(help="What to do, in plain words (or use --task-file).")
    ] = None,
    workspace: Annotated[
        Path | None, typer.Option("--workspace", "-w", help="Directory the agent works in.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name, e.g. qwen3:8b.")] = None,
    backend: Annotated[Backend | None, typer.Option(help="Where the model runs.")] = None,
    host: Annotated[
        str | None, typer.Option(help="Server URL (default: OLLAMA_HOST or localhost:11434).")
    ] = None,
    tier: Annotated[Tier | None, typer.Option(help="Complexity: sets the iteration limit.")] = None,
    max_iterations: Annotated[
        int | None, typer.Option(min=1, help="Model turns allowed (overrides --tier).")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option(min=1, help="Wall clock for the whole task, in seconds.")
    ] = None,
    token_budget: Annotated[
        int | None, typer.Option(min=1, help="Tokens (prompt + reply) the task may spend.")
    ] = None,
    verify: Annotated[
        list[str] | None,
        typer.Option(help="Shell command that must exit 0 for the task to pass. Repeatable."),
    ] = None,
    agentic: Annotated[
        bool | None,
        typer.Option(
            "--agentic/--simple",
            help="Tool loop, or one answer without tools (default: decided from the task).",
            show_default=False,
        ),
    ] = None,
    task_file: Annotated[
        Path | None, typer.Option(help="JSON or YAML task file; flags override its fields.")
    ] = None,
    approve: Annotated[
        Approve | None,
        typer.Option(
            help="Which commands need your approval (asked on the terminal; refused when "
            "there is none). Default: dangerous.",
            show_default=False,
        ),
    ] = None,
    no_network: Annotated[
        bool | None,
        typer.Option("--no-network", help="Run commands without network access (Linux)."),
    ] = None,
    serve: Annotated[
        bool, typer.Option("--serve", help="Show the run live in the browser (127.0.0.1).")
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print only the Result, as one JSON line.")
    ] = False,
) -> None:
    """Run TASK in the workspace until the model gives a final answer or a guardrail stops it."""
    from localhand.approval import TerminalApprover
    from localhand.cli_store import RunRecording
    from localhand.config import load_settings
    from localhand.events import EventBus
    from localhand.runner import run_task
    from localhand.verify import CommandCheck

    try:
        spec = _task_from(task, task_file).with_changes(
            workspace=workspace.expanduser().resolve() if workspace else None,
            tier=tier.value if tier else None,
            agentic=agentic,
            max_iterations=max_iterations,
            timeout_s=timeout,
            token_budget=token_budget,
            model=model,
            backend=backend.value if backend else None,
        )
        if verify:
            spec = spec.with_changes(checks=(*spec.checks, *(CommandCheck(v) for v in verify)))
        settings = load_settings().with_overrides(
            host=host, approve=approve.value if approve else None, isolate_network=no_network
        )
        bus = EventBus()
        if not json_output:
            from localhand.view import TerminalView

            bus.subscribe(TerminalView())
        with RunRecording(spec, bus, settings=settings, serve=serve) as recording:
            result = run_task(
                spec, settings, bus=bus, store=recording.store, approver=TerminalApprover()
            )
    except ConfigError as exc:
        from rich.markup import escape

        _err().print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    _print_result(result, json_output)
    raise typer.Exit(EXIT_CODES[result.status])


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
        sys.stdout.write(result.output.rstrip() + "\n")
    sys.stdout.flush()


register(app)
register_plan(app)
register_batch(app)


def main() -> None:
    """Console-script entry point. Ctrl-C outside a run (which handles it) ends quietly."""
    _skip_httpx_cli()
    try:
        _narrowed(app, sys.argv[1:2])()
    except KeyboardInterrupt:
        _err().print("[yellow]cancelled[/]")
        sys.exit(130)


def _skip_httpx_cli() -> None:
    """Keep httpx from importing its own command line, which localhand never uses.

    ``import httpx`` imports ``httpx._main`` (click, Rich's progress bars and syntax
    highlighting, pygments: 60-90 ms) unless that import fails, in which case ``httpx.main``
    only prints an install hint. Done in the console script alone, before httpx is imported.
    """
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def _narrowed(app: typer.Typer, first: list[str]) -> typer.Typer:
    """``app`` with only the command that ``first`` (the first argument) names, if it names
    one: typer builds the options of every registered command on each start (~15 ms for the
    others), though only the one invoked can run. Anything else gets the whole ``app``."""
    from typer.main import get_command_name

    def name(info: typer.models.CommandInfo) -> str | None:
        callback = getattr(info.callback, "__name__", None)
        return info.name or (get_command_name(callback) if callback else None)

    chosen = [info for info in app.registered_commands if first and name(info) == first[0]]
    if not chosen:
        return app
    narrowed = copy.copy(app)
    narrowed.registered_commands = chosen
    return narrowed
