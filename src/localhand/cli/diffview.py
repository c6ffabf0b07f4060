"""The change a run made, in the terminal: a summary of files and +/- lines, the diff itself
on request (``--diff``), and a whole, copyable undo command.

The live view (``localhand.cli.view``) calls ``after_run`` at the end of a run; ``show``
calls ``print_change`` with what the store kept. During the run, ``EditsWatched`` hands the
live view each ``edit_file``/``write_file``'s change (``LiveEdit``: a few ``- ``/``+ `` lines,
scrubbed) before its ``tool_call`` line is printed. The diff comes from
``localhand.store.run_diff`` (scrubbed there); every line of it is a file's content, which a
model wrote, so it passes through ``view.printable`` (control characters written out as
``\\x1b``) before it reaches the terminal. Colours come from Rich styles, so a terminal that
has none (a pipe, ``NO_COLOR``) gets plain text.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from localhand.cli.args import diff_requested
from localhand.errors import ConfigError, ToolError
from localhand.safety.approval.approver import escape as shown
from localhand.safety.risk.paths import is_secret_file
from localhand.safety.secrets.scrub import scrub_text
from localhand.tools.files import FileTools
from localhand.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from rich.console import Console

    from localhand.store import Store
    from localhand.store.run_diff import RunChange
    from localhand.tools.workspace import Workspace
    from localhand.types import ToolCall, ToolResult

MAX_FILES_LISTED = 20
"""Files in the summary before "... and N more"."""
EDIT_TOOLS = frozenset({"edit_file", "write_file"})
LIVE_LINES = 6
"""Changed lines of one edit shown as it happens; the rest are counted."""
LIVE_READ_BYTES = 256 * 1024
"""A file larger than this (before or after the edit) gets no lines in the live view."""
LIVE_PAIRS = 40_000
"""Removed × added lines past which the changed block is shown as removed, then added, not
matched line by line (difflib's matching is quadratic at worst: a few ms at this size)."""
LIVE_LINE_CHARS = 300
"""A changed line's length in a pipe, where lines are not cut to a terminal's width."""


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
        head.append(f" · {shown(change.note)}", style="dim")
    if show_hint and change.diff:
        head.append(f" · the lines: {show_hint}", style="dim")
    lines = [head]
    counts = [_counts(f) for f in change.files[:MAX_FILES_LISTED]]
    count_width = max((len(c) for c in counts), default=0)
    paths = [shown(f.path) for f in change.files[:MAX_FILES_LISTED]]
    room = min(max(8, width - count_width - 4), max((len(p) for p in paths), default=0))
    for path, file, count in zip(paths, change.files, counts, strict=False):
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
        text.append(shown(line.replace("\t", "    ")), style=_style(line))
    return text


def undo_line(result: dict[str, Any], store: Store | None, run_id: str | None) -> Text | None:
    """``undo: COMMAND``, whole so it can be copied (``run_diff.undo_command``)."""
    from localhand.store.run_diff import undo_command  # not needed to parse the options

    command = undo_command(result, store, run_id)
    return Text.assemble(("undo: ", "bold"), (command, "cyan")) if command else None


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


def _counts(file: Any) -> str:
    if file.binary:
        return f"({'gone' if file.size is None else f'{file.size:,} bytes'})"
    return f"+{file.added} -{file.removed}"


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


@dataclass(frozen=True, slots=True)
class LiveEdit:
    """One edit as the live view shows it under its ``tool_call`` line."""

    path: str
    """Relative to the workspace, inert."""
    lines: list[str]
    """All its changed lines: ``- removed``, ``+ added``, inert and scrubbed."""

    def texts(self, indent: str) -> list[Text]:
        shown_lines = [Text(indent + line, style=_style(line)) for line in self.lines[:LIVE_LINES]]
        more = len(self.lines) - LIVE_LINES
        return shown_lines + ([Text(f"{indent}… {more} more", style="dim")] if more > 0 else [])


class EditsWatched(ToolRegistry):
    """The run's tools (``inner``'s ``Tool`` objects), each call handing ``seen`` the change it
    made (``None`` for any call but a successful ``edit_file``/``write_file``) before the loop
    emits its ``tool_call``. The file is read before and after the call through the tools' own
    jail, following no symlink: what changed on disk, whatever the arguments said."""

    def __init__(self, inner: ToolRegistry, seen: Callable[[LiveEdit | None], None]) -> None:
        super().__init__(list(inner))
        self.inner, self.seen = inner, seen

    def execute(self, call: ToolCall) -> ToolResult:
        tool = self.inner.get(call.name) if call.name in EDIT_TOOLS else None
        files = getattr(tool.function, "__self__", None) if tool else None
        if not isinstance(files, FileTools):  # not an edit by localhand's own file tools
            self.seen(None)
            return self.inner.execute(call)
        target: Path | None = None
        with suppress(ToolError, OSError, ValueError, TypeError):  # a path the tool refuses
            target = files.workspace.resolve(call.arguments.get("path", ""))
        rel = files.workspace.relpath(target) if target else ""
        before = None if is_secret_file(rel) else _live_text(files.workspace, target)  # unread
        result = self.inner.execute(call)
        after = _live_text(files.workspace, target) if result.ok and before is not None else None
        self.seen(None if after is None else LiveEdit(shown(rel), changed(before or "", after)))
        return result

    def close(self) -> None:
        self.inner.close()


def changed(before: str, after: str) -> list[str]:
    """The lines ``after`` changed of ``before``: ``- removed``, ``+ added``, in order, each
    scrubbed of secrets, made inert and cut to ``LIVE_LINE_CHARS``."""
    old, new = before.splitlines(), after.splitlines()
    same = min(len(old), len(new))  # the unchanged start and end, skipped before matching
    head = next((n for n in range(same) if old[n] != new[n]), same)
    tail = next((n for n in range(same - head) if old[-1 - n] != new[-1 - n]), same - head)
    gone, came = (  # split on "\n" alone: an empty line is a line
        scrub_text("\n".join(part)).split("\n") if part else []
        for part in (old[head : len(old) - tail], new[head : len(new) - tail])
    )
    whole = [("replace", 0, len(gone), 0, len(came))]
    matched = SequenceMatcher(None, gone, came) if len(gone) * len(came) <= LIVE_PAIRS else None
    lines = []
    for kind, old_from, old_to, new_from, new_to in matched.get_opcodes() if matched else whole:
        if kind != "equal":
            lines += [f"- {line}" for line in gone[old_from:old_to]]
            lines += [f"+ {line}" for line in came[new_from:new_to]]
    return [shown(line.replace("\t", "    ")[:LIVE_LINE_CHARS]) for line in lines]


_PATH = re.compile(r'"path": "((?:[^"\\]|\\.)*)"')


def edited_path(summary: str) -> str:
    """The ``path`` in an edit's ``args_summary`` (its arguments' JSON, perhaps cut), inert."""
    found = _PATH.search(summary)
    try:
        return shown(json.loads(f'"{found[1]}"')) if found else ""
    except ValueError:
        return ""


def _live_text(workspace: Workspace, target: Path | None) -> str | None:
    """``target``'s text for the live view: ``""`` when it is not there; ``None`` when its lines
    are not shown (too large, binary, not a regular file, unreadable)."""
    if target is None:
        return None
    try:  # non-blocking: a FIFO where the file should be must not stop the run
        with os.fdopen(workspace.open(target, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
            info = os.fstat(file.fileno())
            regular = stat.S_ISREG(info.st_mode) and info.st_size <= LIVE_READ_BYTES
            data = file.read(LIVE_READ_BYTES + 1) if regular else b"\0"
    except FileNotFoundError:
        return ""
    except (OSError, ToolError):
        return None
    return None if len(data) > LIVE_READ_BYTES or b"\0" in data else data.decode("utf-8", "replace")
