"""``localhand undo RUN``: put a run's workspace back as a checkpoint kept it.

Wiring only; the checkpoints are ``localhand.safety.undo.checkpoint``'s and the restoring is
``localhand.safety.undo.restore``'s. ``RUN`` is what ``show`` takes (a run id, a unique
prefix of it, or ``last``), resolved through the store (``--db``); the checkpoints themselves
live in localhand's data directory.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import TYPE_CHECKING

from localhand.cli.args import Command, add_db_option, fail, inert, number
from localhand.errors import ConfigError

if TYPE_CHECKING:
    from localhand.safety.undo.checkpoint import Checkpoint
    from localhand.safety.undo.restore import UndoPlan

SHOWN = 20
"""Paths listed per kind of change before "... and N more"."""


def undo(args: argparse.Namespace) -> int:
    """Restore a run's workspace as it was before its first dangerous command.

    Shows what will change and asks first (--yes does not). Exit code 0 when restored or
    nothing differs, 1 when the answer was no, 2 when it cannot be done."""
    from localhand.safety.undo import restore as restoring  # not needed to parse the options
    from localhand.store import open_store  # not needed to parse the options

    info = open_store(args.db).run(args.run)
    if info.status == "running":
        raise ConfigError(
            f"run {info.id} is still running; let it finish or stop it (Ctrl-C) first, then undo"
        )
    found = restoring.find(
        info.id, info.task_id, info.started_at, info.finished_at, info.workspace or None
    )
    chosen = _pick(found, args.checkpoint, info.id)
    plan = restoring.plan_undo(chosen)
    _describe(info.id, chosen, found, plan)
    if plan.empty:
        _say("Nothing to do: the workspace already matches that checkpoint.")
        return 0
    if not args.yes and not _confirm("Restore the workspace? [y/N] "):
        _say("Nothing was changed.")
        return 1
    try:
        restoring.undo(chosen, plan)
    except (ConfigError, OSError) as exc:
        fail(
            f"undo stopped part way ({exc}); what was restored so far stays restored. Fix the "
            f"cause and run `localhand undo {info.id} --checkpoint {chosen.number}` again."
        )
    _say(
        f"Restored: {len(plan.restore)} written back, {len(plan.remove)} removed. The workspace "
        f"is as it was before `{inert(chosen.command)}`."
    )
    return 0


def undo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="Run id, a unique prefix of it, or 'last'.")
    parser.add_argument(
        "--checkpoint",
        type=number(int, 1),
        metavar="N",
        help="Which of the run's checkpoints, 1 the oldest (default: 1, the workspace before "
        "the run's first dangerous command).",
    )
    parser.add_argument(
        "-y", "--yes", action="store_true", help="Restore without asking for confirmation."
    )
    add_db_option(parser)


COMMANDS = {"undo": Command(undo, undo_arguments)}


def _pick(found: list[Checkpoint], number: int | None, run_id: str) -> Checkpoint:
    """The checkpoint asked for; by default the oldest, taken before the run's first
    dangerous command: later ones already hold what the earlier commands destroyed."""
    if not found:
        from localhand.safety.undo.checkpoint import KEEP_DAYS  # not needed to parse the options

        raise ConfigError(
            f"run {run_id} has no checkpoint, so there is nothing to undo: the workspace is "
            "copied only before a command the classifier calls dangerous, and this run ran "
            f"none (or its workspace was too big to copy, as `localhand show {run_id}` says, "
            f"or the run is older than the {KEEP_DAYS} days checkpoints are kept)"
        )
    if number is None:
        return found[0]
    if number > len(found):
        raise ConfigError(
            f"run {run_id} has {len(found)} checkpoint(s); use --checkpoint 1 to {len(found)}"
        )
    return found[number - 1]


def _describe(run_id: str, chosen: Checkpoint, found: list[Checkpoint], plan: UndoPlan) -> None:
    _say(
        f"run {run_id}: checkpoint {chosen.number} of {len(found)}, taken "
        f"{_when(chosen.taken_at)} before:\n    {inert(chosen.command)}"
    )
    for other in found:
        if other is not chosen:
            _say(f"  ({other.number}: {_when(other.taken_at)}, before `{inert(other.command)}`)")
    if len(found) > 1:
        _say("  choose another with --checkpoint N")
    _say(f"workspace: {inert(str(chosen.workspace))}")
    _list("write back (changed or deleted since)", [e.path for e in plan.restore])
    _list("remove (not there at the checkpoint)", list(plan.remove))
    _list("recreate directories", [p + "/" for p in plan.create])
    _list("remove directories (once empty)", [p + "/" for p in plan.remove_dirs])
    if plan.unchanged:
        _say(f"{plan.unchanged} file(s) unchanged")
    if chosen.left_out:
        _say("not in the checkpoint, left as they are now: " + inert(", ".join(chosen.left_out)))


def _list(title: str, paths: list[str]) -> None:
    if not paths:
        return
    _say(f"{title}: {len(paths)}")
    for path in paths[:SHOWN]:
        _say(f"  {inert(path)}")
    if len(paths) > SHOWN:
        _say(f"  ... and {len(paths) - SHOWN} more")


def _confirm(question: str) -> bool:
    sys.stdout.write(question)
    sys.stdout.flush()
    answer = sys.stdin.readline()  # "" at end of input: no
    if not sys.stdin.isatty():
        sys.stdout.write("\n")  # the answer was not echoed: end the prompt's line
    return answer.strip().lower() in ("y", "yes")


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
