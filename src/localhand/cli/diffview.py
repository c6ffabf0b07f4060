"""The change a run made, in the terminal: a summary of files and +/- lines, the diff itself
on request (``--diff``), and a whole, copyable undo command.

The live view (``localhand.cli.view``) calls ``after_run`` at the end of a run; ``show``
calls ``print_change`` with what the store kept. The diff comes from
``localhand.store.run_diff`` (scrubbed there); every line of it is a file's content, which a
model wrote, so it passes through ``view.printable`` (control characters written out as
``\\x1b``) before it reaches the terminal. Colours come from Rich styles, so a terminal that
has none (a pipe, ``NO_COLOR``) gets plain text.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from rich.text import Text

from localhand.cli.args import diff_requested
from localhand.errors import ConfigError
from localhand.safety.approval.approver import escape as shown

if TYPE_CHECKING:
    from rich.console import Console

    from localhand.store import Store
    from localhand.store.run_diff import RunChange

MAX_FILES_LISTED = 20
"""Files in the summary before "... and N more"."""


def after_run(view: Any, result: dict[str, Any]) -> None:
    """The live view's end-of-run change lines (``show`` prints its own, from its store:
    a replayed timeline, ``replayed``, prints nothing here)."""
    if getattr(view, "replayed", False):
        return
    from localhand.store import open_store  # not needed to parse the options

    show_diff = bool(getattr(view, "show_diff", False)) or diff_requested()
    store: Store | None
    try:  # the store the run is recorded in (RunRecording's): its id, its before-copy
        store = open_store(None)
    except (ConfigError, OSError, sqlite3.Error):  # no store: the summary, without an id
        store = None
    run_id = _run_id(store, str(result.get("task_id") or ""))
    hint = f"localhand show {run_id} --diff" if run_id else ""
    print_change(
        view.console, result, store=store, run_id=run_id, show_diff=show_diff, show_hint=hint
    )


def print_change(
    console: Console,
    result: dict[str, Any] | None,
    *,
    store: Store | None,
    run_id: str | None,
    show_diff: bool,
    finished_at: float | None = None,
    show_hint: str = "",
) -> None:
    """The summary (and with ``show_diff`` the diff) of ``result``'s change, then how to undo
    it. ``show_hint`` is the command that prints the diff, offered when it is not shown."""
    from localhand.store.run_diff import change_of  # not needed to parse the options

    result = result or {}
    kept = store.archive(run_id) if store is not None and run_id else None
    change = change_of(
        result,
        before=kept.data if kept is not None else None,
        workspace=_workspace(store, run_id) or None,
        finished_at=finished_at,
    )
    if change.files:
        hint = "" if show_diff else show_hint
        for line in summary_lines(change, console.width, show_hint=hint):
            console.print(line)
        if show_diff and change.diff:
            console.print(diff_text(change.diff), soft_wrap=True)
        elif show_diff:
            console.print(Text("  no line diff to show", style="dim"))
    undo = undo_line(result, store, run_id)
    if undo is not None:
        console.print(undo, soft_wrap=True)


def summary_lines(change: RunChange, width: int, *, show_hint: str = "") -> list[Text]:
    """``changes: N files, +A -R`` and a line per file, each fitting ``width`` columns (a long
    path is shortened from its start, where it is least telling)."""
    files = "1 file" if len(change.files) == 1 else f"{len(change.files)} files"
    head = Text.assemble(("changes: ", "bold"), f"{files}, ")
    head.append(f"+{change.added}", style="green")
    head.append(" ")
    head.append(f"-{change.removed}", style="red")
    if change.note:
        head.append(f" · {_inert(change.note)}", style="dim")
    if show_hint and change.diff:
        head.append(f" · the lines: {show_hint}", style="dim")
    lines = [head]
    counts = [_counts(f) for f in change.files[:MAX_FILES_LISTED]]
    count_width = max((len(c) for c, _ in counts), default=0)
    paths = [_inert(f.path) for f in change.files[:MAX_FILES_LISTED]]
    room = min(max(8, width - count_width - 4), max((len(p) for p in paths), default=0))
    for path, file, (count, _) in zip(paths, change.files, counts, strict=False):
        line = Text("  ")
        line.append(_fit(path, room).ljust(room))
        line.append("  ")
        if file.binary:
            line.append(count.rjust(count_width), style="dim")
        else:
            plus, minus = count.split(" ")
            line.append(" " * (count_width - len(count)))
            line.append(plus, style="green")
            line.append(" ")
            line.append(minus, style="red")
        line.no_wrap = True
        lines.append(line)
    if len(change.files) > MAX_FILES_LISTED:
        more = len(change.files) - MAX_FILES_LISTED
        lines.append(Text(f"  … and {more} more files", style="dim"))
    return lines


def diff_text(diff: str) -> Text:
    """The diff, each line made inert (``printable``) and coloured by its kind."""
    text = Text()
    for number, line in enumerate(diff.rstrip("\n").split("\n")):
        if number:
            text.append("\n")
        text.append(_inert(line.replace("\t", "    ")), style=_style(line))
    return text


def undo_line(result: dict[str, Any], store: Store | None, run_id: str | None) -> Text | None:
    """``undo: COMMAND``, whole so it can be copied (``run_diff.undo_command``)."""
    from localhand.store.run_diff import undo_command  # not needed to parse the options

    command = undo_command(result, store, run_id)
    return Text.assemble(("undo: ", "bold"), (command, "cyan")) if command else None


def _inert(text: str) -> str:
    """``text`` with its control characters written out as ``\\x1b``: ``view.printable``'s
    rule (the approval prompt's ``escape``), for one line (the view imports this module)."""
    return text if text.isprintable() else shown(text)


def _style(line: str) -> str:
    if line.startswith(("+++ ", "--- ", "diff --git ")):
        return "bold"
    if line.startswith("@@"):
        return "cyan"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    return ""


def _counts(file: Any) -> tuple[str, bool]:
    if file.binary:
        size = "gone" if file.size is None else f"{file.size:,} bytes"
        return (f"({size})", True)
    return (f"+{file.added} -{file.removed}", False)


def _fit(path: str, room: int) -> str:
    return path if len(path) <= room else "…" + path[len(path) - room + 1 :]


def _run_id(store: Store | None, task_id: str) -> str | None:
    if store is None or not task_id:
        return None

    found = store.open_run_for(task_id)
    if found is not None:
        return found
    try:
        return store.find_run(task_id).run.id
    except ConfigError:
        return None


def _workspace(store: Store | None, run_id: str | None) -> str:
    if store is None or not run_id:
        return ""

    try:
        return store.run(run_id).workspace
    except ConfigError:
        return ""
