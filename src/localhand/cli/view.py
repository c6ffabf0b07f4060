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
import time
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from localhand.cli.diffview import after_run
from localhand.events import Event
from localhand.safety.approval import escape as shown

if TYPE_CHECKING:
    from rich.status import Status

WHILE_WAITING = frozenset({"model_request", "model_progress", "warning", "model_status"})
"""Events that come while a reply is awaited; any other one ends the waiting line."""
NOTE_EVERY_S = 30.0
"""Without a terminal to redraw, how often a watched reply's progress gets a line."""
STATUS_COLOURS = {"pass": "green", "unverified": "cyan", "partial_pass": "yellow"}
"""Each status's colour on a terminal; any other is red."""


class TerminalView:
    """Prints each step as it happens: tool calls with their short results, nudges, stops.

    ``answer`` receives the streamed answer (default: ``sys.stdout`` at the time of writing).
    While a reply is awaited, a line redrawn in place says so and for how long (with
    ``--watch-replies``, also tokens so far and tokens a second); ``live`` (default: whether the
    console is a terminal) says whether it may be redrawn, else progress gets a line now and
    then.
    """

    def __init__(
        self, console: Console | None = None, answer: TextIO | None = None, live: bool | None = None
    ) -> None:
        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self.answer = answer
        self.live = self.console.is_terminal if live is None else live
        self._open: str | None = None
        """``answer`` or ``thinking`` while a streamed line has no newline yet."""
        self._waiting: Waiting | None = None
        self._status: Status | None = None

    def __call__(self, event: Event) -> None:
        if self._waiting is not None and event.type not in WHILE_WAITING:
            self._stop_waiting()
        if self._open is not None and event.type != "answer_delta":
            self._end_line()  # the next line (a warning, the summary) starts on its own
        handler = getattr(self, f"on_{event.type}", None)
        if handler is not None:
            handler(Printable(event))

    def on_answer_delta(self, event: Event) -> None:
        e = event.to_dict()
        kind = "thinking" if e["thinking"] else "answer"
        if self._open not in (None, kind):
            self._end_line()
        opening, self._open = self._open is None, kind  # before writing: Ctrl-C may come mid-way
        if kind == "thinking":  # progress to watch, not the answer: stderr, dimmed
            if opening:
                self.console.print("  [dim]thinking:[/] ", end="")
            self.console.print(escape(e["text"]), style="dim", end="")
        else:
            out = self.answer or sys.stdout
            out.write(e["text"])
            out.flush()
        if e["text"].endswith("\n"):
            self._open = None

    def _end_line(self) -> None:
        if self._open == "thinking":
            self.console.print()
        elif self._open == "answer":
            out = self.answer or sys.stdout
            out.write("\n")
            out.flush()
        self._open = None

    def on_task_started(self, event: Event) -> None:
        e = event.to_dict()
        routing = e.get("routing") or {}
        how = f"up to {e['max_iterations']} iterations"
        if routing.get("agentic") is False:
            how = "one answer, no tools"
        self.console.print(
            f"[bold]▶ {escape(e['description'])}[/]\n"
            f"  [dim]model {escape(e['model'])} · workspace {escape(e['workspace'])} · {how}[/]"
        )

    def on_model_request(self, event: Event) -> None:
        e = event.to_dict()
        if e["constrained"]:
            self.console.print(
                "  [yellow]↻ reply was not a valid call; asking again, constrained[/]"
            )
        self._stop_waiting()
        self._waiting = Waiting(time.monotonic())
        if self.live:
            self._status = self.console.status(self._waiting, refresh_per_second=4)
            self._status.start()

    def on_model_progress(self, event: Event) -> None:
        e = event.to_dict()
        waiting = self._waiting
        if waiting is None:
            return
        waiting.tokens, waiting.tokens_per_s = e["tokens"], e["tokens_per_s"]
        if not self.live and e["elapsed_s"] >= waiting.noted + NOTE_EVERY_S:
            waiting.noted = e["elapsed_s"]
            self.console.print(f"  [dim]· {waiting.describe(e['elapsed_s'])}[/]")

    def _stop_waiting(self) -> None:
        status, self._status, self._waiting = self._status, None, None
        if status is not None:
            status.stop()

    def on_model_reply(self, event: Event) -> None:
        e = event.to_dict()
        if figures := server_figures_line(e):
            self.console.print(f"  [dim]{e['iteration']:>3} │ {figures}[/]")
        text = " ".join(e["content"].split())
        if text and not e["tool_calls"]:
            return  # a final answer is printed at the end; a non-answer shows as a nudge
        if text:
            self.console.print(f"  [dim]{e['iteration']:>3} │ {escape(_clip(text, 160))}[/]")

    def on_tool_call(self, event: Event) -> None:
        e = event.to_dict()
        mark = "[green]✓[/]" if e["ok"] else "[red]✗[/]"
        self.console.print(
            f"  {e['iteration']:>3} │ {mark} [bold cyan]{escape(e['tool_name'])}[/] "
            f"{escape(e['args_summary'])} [dim]→ {escape(e['result_summary'])} "
            f"({e['duration_ms']} ms)[/]"
        )

    def on_nudge(self, event: Event) -> None:
        e = event.to_dict()
        self.console.print(f"  [yellow]↻ nudge {e['nudge_number']}: {escape(e['message'])}[/]")

    def on_guardrail(self, event: Event) -> None:
        e = event.to_dict()
        self.console.print(f"  [bold red]■ stopped by {e['guardrail']}:[/] {escape(e['reason'])}")

    def on_warning(self, event: Event) -> None:
        self.console.print(f"  [yellow]! {escape(event.to_dict()['message'])}[/]")

    def on_model_status(self, event: Event) -> None:
        self.console.print(f"  [dim]· {escape(event.to_dict()['message'])}[/]")

    def on_approval_decided(self, event: Event) -> None:
        e = event.to_dict()
        mark = "[green]✓ approved[/]" if e["approved"] else "[red]✗ denied[/]"
        command = escape(_clip(shown(" ".join(e["command"].split())), 120))
        self.console.print(f"  {mark} [dim]({escape(e['by'])})[/] {command}")

    def on_verification(self, event: Event) -> None:
        for check in event.to_dict()["checks"]:
            mark = "[green]✓ pass[/]" if check["passed"] else "[red]✗ fail[/]"
            self.console.print(f"  {mark} [bold]verify[/] {escape(check['name'])}")

    def on_task_finished(self, event: Event) -> None:
        r = event.to_dict()["result"]
        colour = STATUS_COLOURS.get(r["status"], "red")
        files = ", ".join(r["files_modified"]) or "none"
        self.console.print(
            f"[bold {colour}]■ {r['status']}[/] ({r['termination_reason']}) · "
            f"{r['iterations_used']} iterations · {r['tokens_in']}+{r['tokens_out']} tokens · "
            f"{r['duration_s']:.1f} s · files modified: {escape(files)}"
        )
        if r["status"] == "unverified":
            self.console.print(f"[cyan]? {escape(unverified_line(r.get('suggested_check')))}[/]")
        if r["error"]:
            self.console.print(f"[bold red]error:[/] {escape(r['error'])}")
        if changed := r.get("check_files_changed"):  # absent from older records
            listed = escape(shown(", ".join(changed)))
            self.console.print(f"[bold yellow]! check files changed by the run:[/] {listed}")
        if sensitive := r.get("sensitive_changes"):
            listed = escape(shown(", ".join(sensitive)))
            self.console.print(f"[bold yellow]! sensitive changes:[/] {listed}")
        after_run(self, r)  # the change: files with +/- lines, --diff, the whole undo command


def server_figures_line(reply: dict[str, Any]) -> str:
    """A ``model_reply``'s server figures: tokens prefilled this turn, the cache hit %, prefill
    tokens/s, each "unknown" where the server did not say; "" when it said none of them."""
    prefilled, cached = reply.get("tokens_prefilled"), reply.get("tokens_cached")
    milliseconds = reply.get("prefill_ms")
    if prefilled is None and cached is None and not milliseconds:
        return ""
    total = (prefilled or 0) + (cached or 0)
    hit = f"{100 * cached / total:.0f}%" if cached is not None and total else "unknown"
    rate = "unknown"
    if prefilled and milliseconds:
        rate = f"{prefilled / milliseconds * 1000:,.0f} tok/s"
    amount = "unknown" if prefilled is None else f"{prefilled:,} tok"
    return f"prefill {amount} · cache hit {hit} · prefill rate {rate}"


def unverified_line(suggested: str | None) -> str:
    """What an ``unverified`` Result means, and the command that would check the work."""
    text = "not verified: no check ran, so only the model says the work is done"
    if suggested:
        return f"{text}; `{suggested}` would check it (--verify auto runs it)"
    return f'{text}; pass --verify "COMMAND" to check it'


class TimelineView(TerminalView):
    """The live terminal view, replayed from the store (``localhand show``); events it has no
    line for (plan events, say) get a generic one instead of none. Nothing is awaited in a
    replay: no waiting line, and progress events are left out."""

    replayed = True
    """``show`` prints the change itself, from its store (``diffview.after_run`` does not)."""

    def __init__(self, console: Console | None = None, answer: TextIO | None = None) -> None:
        super().__init__(console, answer, live=False)

    def on_model_request(self, event: Any) -> None:
        """Nothing: a replay awaits no reply."""

    def on_model_progress(self, event: Any) -> None:
        """Nothing: one a second while a reply streamed; the reply itself follows."""

    def on_answer_delta(self, event: Any) -> None:
        """Nothing: ``show`` prints the whole answer once, from the Result, at the end."""

    def __call__(self, event: Any) -> None:
        event = Printable(event)
        handler = getattr(self, f"on_{event.type}", None)
        if handler is not None:
            handler(event)
        elif event.type != "model_request":
            skip = ("type", "task_id", "ts")
            fields = {k: v for k, v in event.to_dict().items() if k not in skip}
            text = " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in fields.items())
            self.console.print(f"  [magenta]• {event.type}[/] [dim]{escape(text[:200])}[/]")


def printable(text: str) -> str:
    """``text`` safe to write to a terminal: every control or invisible formatting character
    (escape sequences, bells, C1 controls, bidi overrides) written out as ``\\x1b`` by the same
    ``escape`` that shows commands for approval; newlines and tabs are kept."""
    if text.isprintable():
        return text
    return "\n".join(line if line.isprintable() else shown(line) for line in text.split("\n"))


def printable_data(data: Any) -> Any:
    """``data`` (an event's JSON-like fields) with ``printable`` applied to every string."""
    if isinstance(data, str):
        return printable(data)
    if isinstance(data, dict):
        return {key: printable_data(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [printable_data(value) for value in data]
    return data


class Printable:
    """An event as the views read it (``type``, ``to_dict()``), its strings made printable."""

    def __init__(self, event: Any) -> None:
        self.type: str = event.type
        self._data = printable_data(event.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return self._data


class Waiting:
    """The waiting line: rendered anew at each refresh, so its clock runs by itself."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.tokens: int | None = None
        self.tokens_per_s: float | None = None
        self.noted = 0.0
        """The elapsed seconds at the last progress line (without a live terminal)."""

    def describe(self, elapsed: float) -> str:
        text = f"waiting for the model's reply: {elapsed:.0f} s"
        if self.tokens is not None:
            text += f", {self.tokens} tokens"
            if self.tokens_per_s is not None:
                text += f", {self.tokens_per_s:.1f} tokens/s"
        return text

    def __rich__(self) -> Text:
        return Text(self.describe(time.monotonic() - self.started), style="dim")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
