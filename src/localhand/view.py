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
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape

from localhand.events import Event
from localhand.safety.approval import escape as shown


class TerminalView:
    """Prints each step as it happens: tool calls with their short results, nudges, stops.

    ``answer`` receives the streamed answer (default: ``sys.stdout`` at the time of writing).
    """

    def __init__(self, console: Console | None = None, answer: TextIO | None = None) -> None:
        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self.answer = answer
        self._open: str | None = None
        """``answer`` or ``thinking`` while a streamed line has no newline yet."""

    def __call__(self, event: Event) -> None:
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

    def on_model_reply(self, event: Event) -> None:
        e = event.to_dict()
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
        colour = {"pass": "green", "partial_pass": "yellow"}.get(r["status"], "red")
        files = ", ".join(r["files_modified"]) or "none"
        self.console.print(
            f"[bold {colour}]■ {r['status']}[/] ({r['termination_reason']}) · "
            f"{r['iterations_used']} iterations · {r['tokens_in']}+{r['tokens_out']} tokens · "
            f"{r['duration_s']:.1f} s · files modified: {escape(files)}"
        )
        if r["error"]:
            self.console.print(f"[bold red]error:[/] {escape(r['error'])}")


class TimelineView(TerminalView):
    """The live terminal view, replayed from the store (``localhand show``); events it has no
    line for (plan events, say) get a generic one instead of none."""

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


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
