"""The live terminal view: one subscriber to the event stream, writing to stderr.

stdout is kept for the answer (or, with ``--json``, the Result alone), so piping works. The
simple path's answer streams there as it arrives (``answer_delta``); the tool loop's final
answer is printed by the CLI at the end.

Every text an event carries comes from a model or a command, and either can print terminal
escapes: a clipboard write (OSC 52), a link that hides its target (OSC 8), a screen clear,
cursor moves that paint over earlier lines. So each event's strings pass through ``printable``
(control characters written out as ``\x1b``, newlines and tabs kept) before they are shown,
live and in ``localhand show``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from localhand.cli.args import STATUS_COLOURS
from localhand.cli.diffview import EDIT_TOOLS, EditsWatched, LiveEdit, after_run, edited_path
from localhand.cli.lines import (
    StreamWrap,
    answer_width,
    fit,
    fold,
    hook_line,
    one_line,
    terminal_width,
)
from localhand.cli.printable import printable_data
from localhand.cli.running import Waiting, arguments_shown, running_label
from localhand.cli.server_figures import server_figures_line, server_totals_line
from localhand.events import Event
from localhand.safety.approval.approver import escape as shown

if TYPE_CHECKING:
    from rich.status import Status

    from localhand.tools.registry import ToolRegistry

WHILE_WAITING = frozenset({"model_request", "model_progress", "warning", "model_status"})
"""Events that come while a reply is awaited; any other one ends the waiting line."""
NOTE_EVERY_S = 30.0
"""Without a terminal to redraw, how often a watched reply's progress gets a line."""
QUIET_EVENTS = frozenset({"answer_delta", "task_finished"})
"""What ``-q`` shows: the answer and the status."""


class TerminalView:
    """Prints each step as it happens, one line each, cut to the terminal's width: tool
    calls with their short results, nudges, stops.

    ``answer`` receives the streamed answer (default: ``sys.stdout`` at the time of writing).
    While a reply is awaited or a command runs, a line redrawn in place says so and for how
    long (with ``--watch-replies``, also tokens so far and tokens a second); ``live``
    (default: whether the console is a terminal) says whether it may be redrawn; without a
    terminal nothing is redrawn and nothing extra printed (a watched reply's progress gets a
    line now and then). ``verbose`` (``-v``) adds the model's profile and sampling line;
    ``quiet`` (``-q``) shows only the answer and the status; ``show_thinking`` shows the
    model's thinking, dimmed and folded to a few lines.
    """

    def __init__(
        self,
        console: Console | None = None,
        answer: TextIO | None = None,
        live: bool | None = None,
        *,
        verbose: bool = False,
        quiet: bool = False,
        show_thinking: bool = False,
    ) -> None:
        self._own = console is None  # the process's stderr: its terminal is asked its width
        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self.answer = answer
        self.live = self.console.is_terminal if live is None else live
        self.verbose, self.quiet, self.show_thinking = verbose, quiet, show_thinking
        self._open: str | None = None
        """``answer`` while a streamed answer's line has no newline yet."""
        self._waiting: Waiting | None = None
        self._status: Status | None = None
        self._pending: list[str] = []
        """What the tools the last reply called will do, in order: the running line's label."""
        self._thought = ""
        """Thinking streamed so far, folded when the answer (or anything else) comes."""
        self._wrap: StreamWrap | None = None
        """Wraps the streamed answer at words, on a terminal."""
        self._streamed = False
        """Whether this reply's thinking streamed (so its ``model_reply`` does not repeat it)."""
        self._edit: LiveEdit | None = None
        """The change the call about to be reported made (``watch_edits``), shown under it."""
        self._lock = threading.RLock()  # the approver pauses the running line from the loop

    def __call__(self, event: Event) -> None:
        if self.quiet and event.type not in QUIET_EVENTS:
            return
        with self._lock:
            e = printable_data(event.to_dict())
            streaming_thought = event.type == "answer_delta" and e["thinking"]
            ends_waiting = event.type not in WHILE_WAITING and not streaming_thought
            if self._waiting is not None and ends_waiting:
                self._stop_waiting()
            if self._thought and not streaming_thought:
                self._fold_thinking()
            if self._open is not None and event.type != "answer_delta":
                self._end_line()  # the next line (a warning, the summary) starts on its own
            handler = getattr(self, f"on_{event.type}", None)
            if handler is not None:
                handler(e)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No line redrawn while the block runs (an approval question on the terminal)."""
        with self._lock:
            waiting, status, self._status = self._waiting, self._status, None
            if status is not None:
                status.stop()
        try:
            yield
        finally:
            with self._lock:  # still waiting for the same thing: its line comes back
                if status is not None and self._status is None and self._waiting is waiting:
                    self._status = status
                    status.start()

    def watch_edits(self, tools: ToolRegistry) -> ToolRegistry:
        """``tools`` handing this view each edit's change before its ``tool_call`` arrives
        (``Session(wrap_tools=...)``): the event carries only the arguments, cut."""
        return EditsWatched(tools, lambda edit: setattr(self, "_edit", edit))

    # -- lines -------------------------------------------------------------------------------
    def line(self, markup: str) -> None:
        """Print one step's line: ``markup`` (Rich markup), on one line that fits."""
        self.console.print(fit(Text.from_markup(markup), self._width()), soft_wrap=True)

    def message(self, markup: str) -> None:
        """Print a message to read in full (a warning, an error): on a terminal it wraps at
        word boundaries, never mid-word; in a pipe it stays one line."""
        self.console.print(markup, soft_wrap=self._width() is None)

    def _width(self) -> int | None:
        return terminal_width(self.console, self._own)

    # -- the answer and the thinking --------------------------------------------------------
    def on_answer_delta(self, e: dict[str, Any]) -> None:
        if e["thinking"]:  # progress to watch, not the answer: folded on stderr, if asked for
            self._streamed = True
            if self.show_thinking:
                self._thought += e["text"]
            if self._waiting is not None:
                self._waiting.label = "the model is thinking"
            return
        out = self.answer or sys.stdout
        if self._open is None:
            self._open = "answer"  # before writing: Ctrl-C may come mid-way
            width = answer_width(out)
            self._wrap = StreamWrap(width) if width is not None else None
        out.write(self._wrap.feed(e["text"]) if self._wrap else e["text"])
        out.flush()
        if e["text"].endswith("\n"):
            self._open = None

    def _fold_thinking(self) -> None:
        thought, self._thought = self._thought, ""
        self._print_thinking(thought)

    def _print_thinking(self, thought: str) -> None:
        if not thought.strip():
            return
        self.console.print(Text("  thinking:", style="dim"), soft_wrap=True)
        for line in fold(thought, self._width()):
            self.console.print(line, soft_wrap=True)

    def _end_line(self) -> None:
        if self._open == "answer":
            out = self.answer or sys.stdout
            out.write((self._wrap.flush() if self._wrap else "") + "\n")
            out.flush()
        self._open = None

    # -- the run -----------------------------------------------------------------------------
    def on_task_started(self, e: dict[str, Any]) -> None:
        routing = e.get("routing") or {}
        how = f"up to {e['max_iterations']} iterations"
        if routing.get("agentic") is False:
            how = "one answer, no tools"
        self.line(f"[bold]▶ {escape(one_line(e['description']))}[/]")
        where = f" · workspace {escape(e['workspace'])}" if self.verbose else ""
        self.line(f"  [dim]model {escape(e['model'])}{where} · {how}[/]")

    def on_model_request(self, e: dict[str, Any]) -> None:
        if e["constrained"]:
            self.line("  [yellow]↻ reply was not a valid call; asking again, constrained[/]")
        self._streamed = False
        self._start_waiting("waiting for the model's reply")

    def on_model_progress(self, e: dict[str, Any]) -> None:
        waiting = self._waiting
        if waiting is None:
            return
        waiting.tokens, waiting.tokens_per_s = e["tokens"], e["tokens_per_s"]
        if not self.live and e["elapsed_s"] >= waiting.noted + NOTE_EVERY_S:
            waiting.noted = e["elapsed_s"]
            self.line(f"  [dim]· {waiting.describe(e['elapsed_s'])}[/]")

    def _start_waiting(self, label: str) -> None:
        self._stop_waiting()
        self._waiting = Waiting(time.monotonic(), label, width=self._width)
        if self.live:
            self._status = self.console.status(self._waiting, refresh_per_second=4)
            self._status.start()

    def _stop_waiting(self) -> None:
        status, self._status, self._waiting = self._status, None, None
        if status is not None:
            status.stop()

    def _run_next(self) -> None:
        """The running line for the next tool the reply called (a command: for how long);
        for a call written as text, or the checks after an answer, just for how long."""
        if self.live:
            self._start_waiting(self._pending[0] if self._pending else "working")

    def on_model_reply(self, e: dict[str, Any]) -> None:
        if e.get("thinking") and self.show_thinking and not self._streamed:
            self._print_thinking(e["thinking"])
        self._pending = [running_label(call) for call in e["tool_calls"]]
        # what the server said it prefilled and reused: per turn with -v (and in `show`); the
        # run's totals at its end, so the default stays one line per step
        if self.verbose and (figures := server_figures_line(e)):
            self.line(f"  [dim]{e['iteration']:>3} │ {figures}[/]")
        text = one_line(e["content"])
        if text and e["tool_calls"]:
            self.line(f"  [dim]{e['iteration']:>3} │ {escape(text)}[/]")
        # a final answer is printed at the end; a non-answer shows as a nudge
        self._run_next()

    def on_tool_call(self, e: dict[str, Any]) -> None:
        mark = "[green]✓[/]" if e["ok"] else "[red]✗[/]"
        head = Text.from_markup(
            f"  {e['iteration']:>3} │ {mark} [bold cyan]{escape(e['tool_name'])}[/] "
        )
        took = e["duration_ms"]
        tail = Text(f" ({took / 1000:.1f} s)" if took >= 1000 else f" ({took} ms)", style="dim")
        edit, self._edit = self._edit, None
        if e["tool_name"] in EDIT_TOOLS:  # its path; its change, when known, on lines below
            args = Text(edit.path if edit else edited_path(e["args_summary"]))
        else:  # an argument's JSON escapes decoded: inert again
            args = Text(shown(arguments_shown(e["args_summary"])))
        result = Text(f" → {one_line(e['result_summary'])}", style="dim")
        width = self._width()
        if width is not None:  # the arguments and the result share what is left, both seen
            room = max(width - head.cell_len - tail.cell_len, 8)
            args = fit(args, max(room - result.cell_len, room // 2))
            result = fit(result, room - args.cell_len)
        line = Text.assemble(head, args, result, tail)
        self.console.print(fit(line, width), soft_wrap=True)
        for text in edit.texts(" " * 8) if edit else ():  # under the mark, by spaces alone
            self.console.print(fit(text, width), soft_wrap=True)
        if self._pending:
            self._pending.pop(0)
        self._run_next()

    def on_nudge(self, e: dict[str, Any]) -> None:
        self.line(f"  [yellow]↻ nudge {e['nudge_number']}: {escape(one_line(e['message']))}[/]")

    def on_guardrail(self, e: dict[str, Any]) -> None:
        self.message(f"  [bold red]■ stopped by {e['guardrail']}:[/] {escape(e['reason'])}")

    def on_warning(self, e: dict[str, Any]) -> None:
        self.message(f"  [yellow]! {escape(e['message'])}[/]")

    def on_model_status(self, e: dict[str, Any]) -> None:
        message = e["message"]
        if self.verbose:
            self.line(f"  [dim]· {escape(one_line(message))}[/]")
        elif self._waiting is not None:  # loading a model, say: the running line says so
            self._waiting.label = f"waiting for the model's reply ({one_line(message)})"

    def on_approval_decided(self, e: dict[str, Any]) -> None:
        mark = "[green]✓ approved[/]" if e["approved"] else "[red]✗ denied[/]"
        command = escape(shown(one_line(e["command"])))
        self.line(f"  {mark} [dim]({escape(e['by'])})[/] {command}")
        if e["approved"] and self._pending:
            self._run_next()  # it runs now; its tool_call moves on to the next

    def on_delegate_started(self, e: dict[str, Any]) -> None:
        run, task = e["helper_run"] or "not recorded", escape(one_line(e["task"]))
        self.line(f"  [dim]  ↳ a helper (run {run}) on: {task}[/]")
        self._run_next()  # the delegate call goes on while the helper works

    def on_hook_ran(self, e: dict[str, Any]) -> None:
        self.line(hook_line(e))
        self._run_next()  # the call it ran around goes on (or the checks, after a stop hook)

    def on_verification(self, e: dict[str, Any]) -> None:
        # Loaded at the first check: the end of a run, never before its first request.
        from localhand.evidence.reports import evidence_words

        for check in e["checks"]:
            mark = "[green]✓ pass[/]" if check["passed"] else "[red]✗ fail[/]"
            words = evidence_words(check)  # "report: 12 passed, 0 failed" / "exit code only"
            said = f" [dim]({escape(words)})[/]" if words else ""
            self.line(f"  {mark} [bold]verify[/] {escape(one_line(check['name']))}{said}")

    def on_task_finished(self, e: dict[str, Any]) -> None:
        r = e["result"]
        files = ", ".join(r["files_modified"]) or "none"
        said = (
            f"{r['iterations_used']} iterations · {r['tokens_in']}+{r['tokens_out']} tokens · "
            f"{r['duration_s']:.1f} s · files modified: {escape(files)}"
        )
        if not self.finished(r, said):
            return
        if r["status"] == "unverified":
            self.message(f"[cyan]? {escape(unverified_line(r.get('suggested_check')))}[/]")
        if changed := r.get("check_files_changed"):  # absent from older records
            listed = escape(shown(", ".join(changed)))
            self.message(f"[bold yellow]! check files changed by the run:[/] {listed}")
        if sensitive := r.get("sensitive_changes"):
            listed = escape(shown(", ".join(sensitive)))
            self.message(f"[bold yellow]! sensitive changes:[/] {listed}")
        after_run(self, r)  # the change: files with +/- lines, --diff, the whole undo command

    def finished(self, r: dict[str, Any], said: str) -> bool:
        """A Result's status line (``said`` after its status and reason), its error and, unless
        ``-q``, what the server said the run cost; False when ``-q`` wants nothing more."""
        colour = STATUS_COLOURS.get(r["status"], "red")
        self.message(f"[bold {colour}]■ {r['status']}[/] ({r['termination_reason']}) · {said}")
        if r["error"]:
            self.message(f"[bold red]error:[/] {escape(r['error'])}")
        if self.quiet:
            return False
        if totals := server_totals_line(r.get("prefill")):
            self.message(f"[dim]{totals}[/]")
        return True


def unverified_line(suggested: str | None) -> str:
    """What an ``unverified`` Result means, and the command that would check the work."""
    text = "not verified: no check was given, run or adopted, so only the model says it is done"
    if suggested:
        return f"{text}; `{suggested}` would check it (--verify auto runs it)"
    return f'{text}; pass --verify "COMMAND" to check it'


class TimelineView(TerminalView):
    """The live terminal view, replayed from the store (``localhand show``; a plan run has
    plan mode's, ``PlanView``); events it has no line for get a generic one instead of none.
    Nothing is awaited in a replay: no waiting line, and progress events are left out."""

    replayed = True
    """``show`` prints the change itself, from its store (``diffview.after_run`` does not)."""

    def __init__(self, console: Console | None = None, answer: TextIO | None = None) -> None:
        super().__init__(console, answer, live=False, verbose=True)  # a record: all of it

    def on_model_request(self, e: dict[str, Any]) -> None:
        """Nothing: a replay awaits no reply."""

    def on_model_progress(self, e: dict[str, Any]) -> None:
        """Nothing: one a second while a reply streamed; the reply itself follows."""

    def on_answer_delta(self, e: dict[str, Any]) -> None:
        """Nothing: ``show`` prints the whole answer once, from the Result, at the end."""

    def __call__(self, event: Any) -> None:
        e = printable_data(event.to_dict())
        handler = getattr(self, f"on_{event.type}", None)
        if handler is not None:
            handler(e)
        else:
            skip = ("type", "task_id", "ts", "seq", "run_id")  # the store's, for the replay
            fields = {k: v for k, v in e.items() if k not in skip}
            text = " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in fields.items())
            self.console.print(f"  [magenta]• {event.type}[/] [dim]{escape(text[:200])}[/]")
