"""Commands over the run store: ``runs``, ``show RUN``, ``replay RUN``, ``serve``.

Wiring only; ``COMMANDS`` adds them to the main command line. Each takes ``--db`` (default:
``LOCALHAND_DB`` or the user's data directory, see ``localhand.paths.db_path``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.cli.args import (
    STATUS_COLOURS,
    Command,
    add_db_option,
    add_json_option,
    console,
    fail,
    number,
    settings_of,
)
from localhand.cli.jsonl import print_json
from localhand.cli.printable import printable
from localhand.config.options import ModelOptions

if TYPE_CHECKING:  # the store, Rich and the rest load when a command runs (fast start-up)
    from localhand.store import Store

NUMERIC = ("ITER", "TOKENS", "DURATION")


def runs(args: argparse.Namespace) -> int:
    """List recorded runs, newest first: status, reason, iterations, tokens, duration."""
    store = _open(args.db)
    found = store.runs(args.limit)
    if args.json_output:
        print_json([{k: v for k, v in info.to_dict().items() if k != "result"} for info in found])
        return 0
    from rich.table import Table  # rich loads only when used

    out = console()
    if not found:
        out.print(f"no runs recorded yet in {store.path}")
        return 0
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in ("RUN", "STARTED", "STATUS", "REASON", "ITER", "TOKENS", "DURATION", "TASK"):
        table.add_column(
            name,
            justify="right" if name in NUMERIC else "left",
            no_wrap=name != "TASK",
            overflow="ellipsis",
        )
    for info in found:
        task = info.description if len(info.description) <= 50 else info.description[:49] + "…"
        table.add_row(
            info.id + _MARKS.get(info.kind, ""),
            datetime.fromtimestamp(info.started_at).strftime("%m-%d %H:%M"),
            _status(info.status),
            info.termination_reason or "",
            str(info.iterations),
            f"{info.tokens_in + info.tokens_out:,}",
            _duration(info.duration_s),
            _shown(task),
        )
    out.print(table)
    out.print(_counts(info.status for info in found))
    return 0


_MARKS = {"replay": " ↻", "helper": " ↳"}
"""After a run's id in ``runs``: a replay of another run; a helper a ``delegate`` call ran."""


def _counts(statuses: Iterable[str]) -> str:
    """``12 runs: 7 pass · 2 unverified · 3 fail``: each status counted apart, ``unverified``
    (a final answer no check confirmed) never with ``pass``."""
    counts = Counter(statuses)
    order = ["pass", "unverified", "partial_pass", "fail", "error", "interrupted", "running"]
    ranked = sorted(counts, key=lambda s: order.index(s) if s in order else len(order))
    parts = " · ".join(f"{counts[s]} {_status(s)}" for s in ranked)
    return f"[dim]{sum(counts.values())} runs:[/] {parts}"


def runs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-n",
        "--limit",
        type=number(int, 1),
        default=20,
        metavar="N",
        help="How many runs (default: %(default)s).",
    )
    add_db_option(parser)
    add_json_option(parser, "Print JSON instead of text.")


def show(args: argparse.Namespace) -> int:
    """Print a run's timeline: tool calls, nudges, stops, verification and the Result.

    Then what it changed (files with +/- lines; with ``--diff``, the diff itself) and the
    whole command that undoes it (``localhand.cli.diffview``).

    RUN is a run id (or a unique prefix), ``last``, or the Result's ``task_id``: a task run
    several times shows its latest run, and a note on stderr says so."""
    from localhand.cli.plan_view import PlanView  # not needed to parse the options
    from localhand.cli.view import TimelineView  # not needed to parse the options
    from localhand.safety.secrets.scrub import scrub_data  # not needed to parse the options
    from localhand.store.run_diff import stored_change  # not needed to parse the options

    store, diff = _open(args.db), args.diff
    match = store.find_run(args.run)
    info = match.run
    if match.note:  # on stderr: with --json, stdout stays one JSON document
        console(stderr=True, soft_wrap=True).print(f"[yellow]note:[/] {_shown(match.note)}")
    events = store.events(info.id)
    # Scrubbed again: a store written before the scrubber knew a secret's shape still has it.
    if args.json_output:
        run_data = scrub_data(info.to_dict())
        found = [scrub_data(e.to_dict()) for e in events]
        print_json({"run": run_data, "events": found, "change": stored_change(store, info)})
        return 0
    out = console(soft_wrap=True)
    started = datetime.fromtimestamp(info.started_at).strftime("%Y-%m-%d %H:%M:%S")
    replay = f" · replay of {info.replay_of}" if info.replay_of else ""
    link = "helper of" if info.kind == "helper" else "continues"  # a delegate call's helper
    replay += f" · {link} {info.continues}" if info.continues else ""
    out.print(f"[bold]run {info.id}[/] · {_status(info.status)} · {started}{replay}")
    # as the terminal showed it live: plan mode's view for a plan run, else the loop's
    plan = "steps" in (info.result or {}) or any(e.type == "plan_started" for e in events)
    # a stored event has what the views read of an event (type, to_dict)
    view: Callable[[Any], None] = (
        PlanView(out, live=False, verbose=True) if plan else TimelineView(out)
    )
    for event in events:
        view(replace(event, data=scrub_data(event.data)))
    if info.error and not any(e.type == "task_finished" for e in events):  # older stores
        out.print(f"[bold red]■ {info.status}:[/] {_shown(scrub_data(info.error))}")
    if info.status == "interrupted":
        out.print(
            f"[bold magenta]■ interrupted[/]: the process ended after {len(events)} events, "
            "before the run finished"
        )
    elif info.status == "running":
        out.print("[blue]… still running[/]")
    if info.result is not None:
        from localhand.cli.diffview import print_change  # not needed to parse the options

        hint = "" if diff else f"localhand show {info.id} --diff"
        print_change(
            out, scrub_data(info.result), store=store, run_id=info.id, show_diff=diff,
            finished_at=info.finished_at, show_hint=hint,
        )  # fmt: skip
    output = scrub_data((info.result or {}).get("output") or "")
    if output:
        sys.stdout.write(printable(output.rstrip()) + "\n")
    return 0


def show_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run",
        metavar="RUN",
        help="Run id, a unique prefix of it, 'last', or a task id (its latest run).",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="Print the whole diff of what the run changed (scrubbed of secrets), after the "
        "summary of files and +/- lines.",
    )
    add_db_option(parser)
    add_json_option(parser, "Print JSON instead of text.")


def replay(args: argparse.Namespace) -> int:
    """Re-run a recorded run's model replies through the current loop and report differences.

    Exit code 0 when the replay did the same as the recording, 1 when it differs."""
    from localhand.replay import replay_run  # not needed to parse the options
    from localhand.safety.secrets.own_env import forget_secrets  # not needed to parse the options

    forget_secrets()  # the replay runs the recorded commands again: nothing for them to read
    store = _open(args.db)
    report = replay_run(store, args.run, workspace=args.workspace, keep=args.keep)
    if args.json_output:
        print_json(report.to_dict())
        return 0 if report.ok else 1
    out = console(soft_wrap=True)
    out.print(
        f"replayed run {report.run_id}: {report.replies_used} of {report.replies_recorded} "
        f"recorded replies, in a {report.workspace_source} (recorded as run {report.replay_run_id})"
    )
    for note in report.notes:
        out.print(f"[yellow]! {_shown(note)}[/]")
    if args.keep:
        out.print(f"workspace kept at {report.workspace}")
    if report.ok:
        out.print(f"[bold green]✓ same timeline and result[/] ({report.result.status})")
        return 0
    out.print(f"[bold red]✗ {len(report.differences)} difference(s)[/]")
    for diff in report.differences:
        out.print(f"  step {diff.index + 1}:")
        out.print(f"    [red]- recorded: {_shown(diff.recorded or '(nothing)')}[/]")
        out.print(f"    [green]+ replayed: {_shown(diff.replayed or '(nothing)')}[/]")
    return 1


def replay_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="Run id, a unique prefix of it, or 'last'.")
    parser.add_argument(
        "--workspace",
        type=Path,
        metavar="DIR",
        help="Start from a copy of DIR (default: the workspace kept with the run).",
    )
    parser.add_argument(
        "--keep",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="Keep the replay's workspace and print it.",
    )
    add_db_option(parser)
    add_json_option(parser, "Print JSON instead of text.")


def serve(args: argparse.Namespace) -> int:
    """Serve the dashboard: runs, live timelines, plans, and a form to start tasks.

    Every request needs the token (given, or generated and printed in the URL); tasks started
    from the page may only use workspaces under the roots (--workspace-root, else
    [dashboard] workspaces in localhand.toml, else the current directory)."""
    try:
        from localhand.dashboard import start_dashboard  # not needed to parse the options

        # not needed to parse the options
        from localhand.dashboard.settings import broad_roots, load_dashboard_settings
    except ImportError as exc:
        fail(
            f"the dashboard needs FastAPI and uvicorn ({exc.name} is missing): "
            "pip install 'localhand[dashboard]'"
        )
    store = _open(args.db)
    # Only the model: this command's --host is where the page listens, not a model server.
    settings = settings_of(args, ModelOptions(model=args.model))  # --token is read already
    dashboard = load_dashboard_settings(args.workspace_roots or ())
    from localhand.safety.trust.store import never_ask  # not needed to parse the options

    never_ask()  # from here on, nobody at this terminal answers for the page's tasks
    server = start_dashboard(
        store,
        host=args.host,
        port=args.port,
        token=args.token,
        allow_remote=args.allow_remote,
        settings=settings,
        background=False,
        workspaces=dashboard.workspaces,
    )
    err = console(stderr=True, soft_wrap=True)  # never break the URL: it carries the token
    err.print(f"localhand dashboard on [bold]{server.url}[/] (store {store.path}); Ctrl-C stops it")
    from rich.markup import escape  # rich loads only when used

    roots = ", ".join(map(str, dashboard.workspaces))
    err.print(f"tasks from the page may use workspaces under: {escape(roots)}")
    for root in broad_roots(dashboard):
        where = escape(str(root))
        err.print(f"[yellow]warning:[/] the page may start tasks anywhere under {where}")
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn stops cleanly, then re-raises it
        server.serve_forever()
    return 0


def serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="Address to listen on (default: %(default)s).",
    )
    parser.add_argument(
        "--port",
        type=number(int, 0, 65535),
        default=8765,
        metavar="PORT",
        help="Port (0: any free one; default: %(default)s).",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("LOCALHAND_TOKEN") or None,
        metavar="TOKEN",
        help="The token every request must carry (16+ characters; default: LOCALHAND_TOKEN, "
        "else a new one each start, printed in the URL).",
    )
    parser.add_argument(
        "--workspace-root",
        dest="workspace_roots",
        action="append",
        type=Path,
        metavar="DIR",
        help="Tasks started from the page may only use workspaces under DIR (repeatable; "
        "default: [dashboard] workspaces in localhand.toml, else the current directory).",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="Allow a non-loopback --host (whoever reaches it with the token can run tasks).",
    )
    ModelOptions.add_to(parser, ("model",), model={"help": "Default model for tasks started."})
    add_db_option(parser)


COMMANDS = {
    "runs": Command(runs, runs_arguments),
    "show": Command(show, show_arguments),
    "replay": Command(replay, replay_arguments),
    "serve": Command(serve, serve_arguments),
}


def _open(db: Path | None) -> Store:
    from localhand.store import open_store  # not needed to parse the options

    return open_store(db)


def _shown(text: str) -> str:
    """``text`` (from a model, a command or a page) for Rich on a terminal: its control
    characters written out (``cli.printable``), its markup brackets escaped."""
    from rich.markup import escape  # rich loads only when used

    return escape(printable(text))


def _status(status: str) -> str:
    colour = STATUS_COLOURS.get(status, "red")
    return f"[{colour}]{status}[/]"


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"
