"""What a person watches during a batch: a live bar with a line per running task, then a table.

On a terminal the bar redraws in place; elsewhere (CI logs, a pipe) each finished task is one
plain line instead. Both go to the console given (stderr when stdout carries ``--json``).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from localhand.events import Event, summarize

COLOURS = {
    "pass": "green",
    "unverified": "cyan",
    "partial_pass": "yellow",
    "fail": "red",
    "error": "red",
}
MARKS = {"pass": "✓", "unverified": "?", "partial_pass": "~", "fail": "✗", "error": "!"}
"""Each status's mark, in the order the counts are shown: ``unverified`` is counted apart
from ``pass`` (a final answer with no checks is not evidence of work done)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One task in the summary."""

    task_id: str
    result: dict[str, Any]
    where: str = ""
    note: str = ""
    skipped: bool = False


class BatchProgress:
    """A bus subscriber that shows running tasks, plus ``finished()`` for each Result."""

    def __init__(self, total: int, console: Console, *, live: bool | None = None) -> None:
        self.console, self.total = console, total
        self.live = console.is_terminal if live is None else live
        self._counts = dict.fromkeys(MARKS, 0)
        self._rows: dict[str, TaskID] = {}
        self._where: dict[str, str] = {}
        self._done = 0
        self._lock = threading.Lock()
        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[counts]}"),
            console=console,
            disable=not self.live,
        )
        self._overall = self._bar.add_task("[bold]batch[/]", total=total, counts="")

    def __enter__(self) -> BatchProgress:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def __call__(self, event: Event) -> None:
        with self._lock:
            if event.type == "task_started" and event.task_id not in self._rows:
                self._rows[event.task_id] = self._bar.add_task(
                    self._label(event.task_id, 0), total=None, counts=""
                )
            elif event.type == "model_reply" and event.task_id in self._rows:
                iteration = int(event.to_dict().get("iteration") or 0)
                label = self._label(event.task_id, iteration)
                self._bar.update(self._rows[event.task_id], description=label)

    def where(self, task_id: str, place: str) -> None:
        """Say where a task runs (an endpoint, a Ray node)."""
        with self._lock:
            self._where[task_id] = place

    def finished(self, row: Row) -> None:
        status = str(row.result.get("status"))
        with self._lock:
            self._done += 1
            self._counts[status] = self._counts.get(status, 0) + 1
            if row.task_id in self._rows:
                self._bar.remove_task(self._rows.pop(row.task_id))
            self._bar.update(self._overall, completed=self._done, counts=self._count_text())
        if not self.live:
            error = summarize(str(row.result.get("error") or ""), 90) if status == "error" else ""
            self.console.print(
                f"[{COLOURS.get(status, 'red')}]{MARKS.get(status, '!')} {status}[/] "
                f"{escape(row.task_id)} ({self._done}/{self.total})"
                + (f" · {escape(row.where)}" if row.where else "")
                + (f" · {escape(error)}" if error else "")
            )

    def _label(self, task_id: str, iteration: int) -> str:
        where = self._where.get(task_id, "")
        text = f"  {escape(task_id)}" + (f" · iter {iteration}" if iteration else "")
        return text + (f" · [dim]{escape(where)}[/]" if where else "")

    def _count_text(self) -> str:
        parts = [
            f"[{COLOURS[s]}]{MARKS[s]}{n}[/]" for s, n in self._counts.items() if n and s in COLOURS
        ]
        return " ".join(parts)


def summary_table(rows: list[Row]) -> Table:
    """One line per task, in batch order; notes and errors follow in ``summary_notes``."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in ("TASK", "STATUS", "REASON", "ITER", "TOKENS", "TIME", "WHERE"):
        numeric = name in ("ITER", "TOKENS", "TIME")
        table.add_column(
            name,
            justify="right" if numeric else "left",
            no_wrap=name != "WHERE",  # the one column that gives way on a narrow terminal
            overflow="fold" if name == "WHERE" else "ellipsis",
            max_width=24 if name == "TASK" else None,
        )
    for row in rows:
        r = row.result
        status = str(r.get("status"))
        tokens = int(r.get("tokens_in") or 0) + int(r.get("tokens_out") or 0)
        table.add_row(
            escape(row.task_id),
            f"[{COLOURS.get(status, 'red')}]{status}[/]",
            str(r.get("termination_reason") or ""),
            str(r.get("iterations_used") or 0),
            f"{tokens:,}",
            f"{float(r.get('duration_s') or 0):.1f} s",
            escape(row.where.replace("http://", "")),
        )
    return table


def summary_notes(rows: list[Row]) -> list[str]:
    """``task: note`` lines: errors, kept workspaces, refs holding changes, skipped tasks,
    and the answer as JSON of a task given an output schema (cut short; ``--json`` has it
    whole)."""
    lines = []
    for row in rows:
        error = row.result.get("error") if row.result.get("status") == "error" else None
        answer = row.result.get("answer_json")
        shown = None if answer is None else "answer_json " + summarize(_compact(answer), 120)
        for text in (row.note, error, shown):
            if text:
                lines.append(f"  {escape(row.task_id)}: {escape(str(text))}")
    return lines


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def totals_line(rows: list[Row], elapsed_s: float) -> str:
    counts = Counter(str(row.result.get("status")) for row in rows)
    ran = sum(1 for row in rows if not row.skipped)
    parts = [
        f"{n} {s}"
        for s, n in sorted(
            counts.items(), key=lambda kv: list(MARKS).index(kv[0]) if kv[0] in MARKS else 9
        )
    ]
    skipped = len(rows) - ran
    text = f"{len(rows)} tasks: {', '.join(parts)}"
    if skipped:
        text += f" · {skipped} finished before, skipped"
    if ran and elapsed_s > 0:
        text += f" · {ran} ran in {elapsed_s:.1f} s ({ran / elapsed_s * 60:.1f} tasks/min)"
    return text
