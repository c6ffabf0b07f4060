"""The change a run made, in the terminal: a summary of files and +/- lines, the diff itself
on request (``--diff``), and a whole, copyable undo command.

The live view (``localhand.cli.view``) calls ``after_run`` at the end of a run; ``show``
calls ``print_change`` with what the store kept; during the run, ``EditsWatched`` hands it
each edit's changed lines (``LiveEdit``) before its ``tool_call`` line. The diff comes from
``localhand.store.run_diff`` (scrubbed there); every line of it is a file's content, which a
model wrote, so it passes through ``view.printable`` (control characters written out as
``\\x1b``) before it reaches the terminal. Colours come from Rich styles, so a terminal that
has none (a pipe, ``NO_COLOR``) gets plain text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from localhand.cli.args import diff_requested
from localhand.errors import ConfigError, ToolError
from localhand.safety.approval.approver import escape as shown
from localhand.safety.risk.paths import is_secret_file
from localhand.safety.secrets.scrub import scrub_text
from localhand.tools.files import FileTools
from localhand.tools.registry import ToolRegistry, WrappedRegistry

if TYPE_CHECKING:
    from rich.console import Console

    from localhand.store import Store
    from localhand.store.run_diff import RunChange
    from localhand.types import ToolCall, ToolResult

MAX_FILES_LISTED = 20
"""Files in the summary before "... and N more"."""
EDIT_TOOLS = frozenset({"edit_file", "write_file"})
LIVE_LINES = 6
"""Changed lines of one edit shown as it happens; the rest are counted."""
LIVE_LINE_CHARS = 300
"""A changed line's length in a pipe, where lines are not cut to a terminal's width."""


def after_run(view: Any, result: dict[str, Any]) -> None:
    """The live view's end-of-run change lines (``show`` prints its own, from its store:
    a replayed timeline, ``replayed``, prints nothing here)."""
    if getattr(view, "replayed", False):
        return
    from localhand.store import open_store_or_none  # not needed to parse the options

    show_diff = diff_requested()
    # the store the run is recorded in (RunRecording's): its id, its before-copy; without
    # one, the summary without an id
    store = open_store_or_none(None, lambda why: None)
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
    from localhand.store.run_diff import kept_change  # not needed to parse the options

    result = result or {}
    change = kept_change(result, store, run_id, finished_at)
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
    head.append(f"+{change.added}", style="green").append(" ").append(f"-{change.removed}", "red")
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
        line = Text(f"  {_fit(path, room).ljust(room)}  ")
        if file.binary:
            line.append(count.rjust(count_width), style="dim")
        else:
            plus, minus = count.split(" ")
            line.append(" " * (count_width - len(count))).append(plus, "green")
            line.append(" ").append(minus, "red")
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


class EditsWatched(WrappedRegistry):
    """The run's tools (``inner``'s ``Tool`` objects), each call handing ``seen`` the change it
    made (``None`` for any call but a successful ``edit_file``/``write_file``) before the loop
    emits its ``tool_call``: the file read before and after the call, and compared as the
    end-of-run diff compares it (``run_diff``), so it shows what landed on disk."""

    def __init__(self, inner: ToolRegistry, seen: Callable[[LiveEdit | None], None]) -> None:
        super().__init__(inner)
        self.seen = seen

    def execute(self, call: ToolCall) -> ToolResult:
        # the first edit loads it, not the run's start (safety.undo with it: ~30 ms)
        from localhand.store.run_diff import file_diff, read_now

        edited = _edited(self.inner, call)
        before = read_now(*edited) if edited else None
        result = self.inner.execute(call)
        if edited and before is not None and result.ok:
            diff = file_diff(edited[1], before, read_now(*edited))
            self.seen(LiveEdit(shown(edited[1]), changed(diff)) if diff is not None else None)
        else:
            self.seen(None)
        return result


def _edited(tools: ToolRegistry, call: ToolCall) -> tuple[Path, str] | None:
    """The workspace and the file an edit by localhand's own file tools names (as their jail
    resolves it), unless it is secret-looking; ``None`` for any other call."""
    tool = tools.get(call.name) if call.name in EDIT_TOOLS else None
    files = getattr(tool.function, "__self__", None) if tool else None
    if isinstance(files, FileTools):
        with suppress(ToolError, OSError, ValueError, TypeError):  # a path the tool refuses
            rel = files.workspace.relative(call.arguments.get("path", ""))
            return None if is_secret_file(rel) else (files.workspace.root, rel)
    return None


def changed(diff: str) -> list[str]:
    """A file's unified diff (``run_diff.file_diff``) as the live view shows it: its removed
    and added lines, ``- ``/``+ ``, scrubbed, inert and cut to ``LIVE_LINE_CHARS``."""
    lines = scrub_text(diff).split("\n")[3:]  # past `diff --git`, `---` and `+++`
    cut = [f"{line[0]} {line[1:]}"[:LIVE_LINE_CHARS] for line in lines if line[:1] in ("+", "-")]
    return [shown(line.replace("\t", "    ")) for line in cut]


def edited_path(summary: str) -> str:
    """The ``path`` in an edit's ``args_summary`` (its arguments' JSON, perhaps cut), inert."""
    found = re.search(r'"path": ("(?:[^"\\]|\\.)*")', summary)
    with suppress(ValueError):
        return shown(json.loads(found[1])) if found else ""
    return ""
