"""The run's events as ``session/update``s: the model's text and thinking as message and thought
chunks, plan mode's steps as the ACP plan and each step's command as a tool call, and how the
run ended as the terminal says it. The run's own tool calls are shown by
``localhand.acp.tools``, where each call's start and end are known."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.schema import PlanEntryStatus

from localhand.acp.editor import Editor
from localhand.acp.tools import OUTPUT_CHARS, title_of
from localhand.events import AnswerDelta, Event, ModelReply, Warning
from localhand.plan.result import plan_summary, step_failure
from localhand.types import ToolCall

SEEN = frozenset(
    {
        "plan_started",
        "plan_revised",
        "step_started",
        "step_finished",
        "step_skipped",
        "plan_cancelled",
        "task_finished",
    }
)
"""The events ``PlanView`` turns into updates."""


class Presenter:
    """Subscribe ``presenter`` to the run's bus; it sends what the editor shows."""

    def __init__(self, editor: Editor) -> None:
        self.editor = editor
        self.streamed = False
        """Whether the answer came as ``answer_delta``s (the simple path): its reply is not
        sent a second time."""
        self.plan = PlanView(editor.next_call_id)

    def __call__(self, event: Event) -> None:
        if isinstance(event, AnswerDelta):
            self.streamed = True
            chunk = update_agent_thought_text if event.thinking else update_agent_message_text
            self.editor.update(chunk(event.text))
        elif isinstance(event, ModelReply) and not self.streamed:
            for update in reply_updates(event.thinking, event.content):
                self.editor.update(update)
        elif isinstance(event, Warning):
            self.editor.update(update_agent_thought_text(f"[localhand] {event.message}\n"))
        elif event.type in SEEN:
            for update in self.plan.see(event.type, event.to_dict()):
                self.editor.update(update)


def reply_updates(thinking: str, content: str) -> list[Any]:
    """A model reply as the editor shows it, live or replayed: its thinking as a thought chunk
    and its text as a message chunk, each when it has any."""
    chunks = ((update_agent_thought_text, thinking), (update_agent_message_text, content))
    return [chunk(text) for chunk, text in chunks if text.strip()]


class PlanView:
    """Plan mode's steps as the ACP plan (each pending, in progress or completed; a failed or
    skipped step stays pending and says why), each try of a step as an ``execute`` tool call
    that completes or fails with its output, why the plan stopped, and how the run ended, in
    the terminal's words. Fed the live events (``Presenter``) or the recorded ones
    (``localhand.acp.replay``); ``call_id`` gives each step's tool call its id."""

    def __init__(self, call_id: Callable[[], str]) -> None:
        self.call_id = call_id
        self.steps: list[dict[str, Any]] = []
        self.status: dict[str, tuple[PlanEntryStatus, str]] = {}
        """Each step's entry status, and what is said after its text (why it failed)."""
        self.calls: dict[str, str] = {}
        """The tool call of each step running now."""

    def see(self, kind: str, data: dict[str, Any]) -> list[Any]:
        """The updates one event (its type and fields) makes: none when it changes nothing."""
        step_id = str(data.get("step_id") or "")
        plan = data.get("plan")
        if kind in ("plan_started", "plan_revised") and isinstance(plan, dict):
            self.steps = [s for s in plan.get("steps", []) if isinstance(s, dict)]
        elif kind == "step_started":
            self.status[step_id] = ("in_progress", "")
            self.calls[step_id] = call = self.call_id()
            command = str(data.get("command") or "")
            title = title_of(ToolCall("run_command", {"command": command}))
            started = start_tool_call(
                call, title, kind="execute", status="in_progress", raw_input={"command": command}
            )
            return [self.update(), started]
        elif kind == "step_finished":
            return self._finished(step_id, data)
        elif kind == "step_skipped":
            self.status[step_id] = ("pending", f"skipped: {data.get('reason') or ''}")
        elif kind == "plan_cancelled":
            said = f"The plan stopped ({data.get('termination_reason')}): {data.get('reason')}"
            return [update_agent_message_text(f"\n\n{said}")]
        elif kind == "task_finished":
            return [update_agent_message_text(f"\n\n{line}") for line in ending(data)]
        else:
            return []
        return [self.update()]

    def _finished(self, step_id: str, data: dict[str, Any]) -> list[Any]:
        done = data.get("status") == "done"
        why = step_failure(data) if data.get("refused") else f"failed: {step_failure(data)}"
        self.status[step_id] = ("completed", "") if done else ("pending", why)
        updates = [self.update()]
        call = self.calls.pop(step_id, None)
        if call is not None:
            output = str(data.get("output_tail") or "")[-OUTPUT_CHARS:]
            updates.append(
                update_tool_call(
                    call,
                    status="completed" if done else "failed",
                    content=[tool_content(text_block(output))],
                    raw_output={"exit_code": data.get("exit_code")},
                )
            )
        return updates

    def update(self) -> Any:
        """The plan as it stands, as one ``plan`` update (the ACP sends it whole)."""
        return update_plan(self.entries())

    def entries(self) -> list[Any]:
        entries = []
        for step in self.steps:
            step_id = str(step.get("id", ""))
            text = str(step.get("description") or step.get("command") or step_id)
            status, why = self.status.get(step_id, ("pending", ""))
            entries.append(plan_entry(f"{text} ({why})" if why else text, status=status))
        return entries


def ending(data: dict[str, Any]) -> list[str]:
    """How a run ended (its ``task_finished``), as the terminal says it: the status and
    termination reason, a plan's steps or a run's checks, and its error."""
    result = data.get("result") or {}
    head = f"■ {result.get('status')} ({result.get('termination_reason')})"
    if isinstance(result.get("steps"), list):
        head += f" · {plan_summary(result)}"
    for check in result.get("verification") or []:
        head += f" · {'✓' if check.get('passed') else '✗'} {check.get('name')}"
    error = result.get("error")
    return [head, f"localhand: {error}"] if error else [head]
