"""The run's events as ``session/update``s: the model's text and thinking as message and thought
chunks, plan mode's steps as the ACP plan. Tool calls are shown by ``localhand.acp.tools``,
where each call's start and end are known."""

from __future__ import annotations

from typing import Any

from acp import plan_entry, update_agent_message_text, update_agent_thought_text, update_plan
from acp.schema import PlanEntryStatus

from localhand.acp.editor import Editor
from localhand.events import AnswerDelta, Event, ModelReply, Warning


class Presenter:
    """Subscribe ``presenter`` to the run's bus; it sends what the editor shows."""

    def __init__(self, editor: Editor) -> None:
        self.editor = editor
        self.streamed = False
        """Whether the answer came as ``answer_delta``s (the simple path): its reply is not
        sent a second time."""
        self.steps: list[dict[str, Any]] = []
        self.status: dict[str, PlanEntryStatus] = {}

    def __call__(self, event: Event) -> None:
        if isinstance(event, AnswerDelta):
            self.streamed = True
            chunk = update_agent_thought_text if event.thinking else update_agent_message_text
            self.editor.update(chunk(event.text))
        elif isinstance(event, ModelReply) and not self.streamed:
            if event.thinking.strip():
                self.editor.update(update_agent_thought_text(event.thinking))
            if event.content.strip():
                self.editor.update(update_agent_message_text(event.content))
        elif isinstance(event, Warning):
            self.editor.update(update_agent_thought_text(f"[localhand] {event.message}\n"))
        else:
            self._plan(event)

    def _plan(self, event: Event) -> None:
        """Plan mode: the plan's steps (``plan_started``, ``plan_revised``), each pending, in
        progress or completed as its ``step_started`` and ``step_finished`` say."""
        data = getattr(event, "plan", None)
        if event.type in ("plan_started", "plan_revised") and isinstance(data, dict):
            self.steps = [s for s in data.get("steps", []) if isinstance(s, dict)]
        elif event.type == "step_started":
            self.status[str(getattr(event, "step_id", ""))] = "in_progress"
        elif event.type == "step_finished":
            self.status[str(getattr(event, "step_id", ""))] = "completed"
        else:
            return
        self.editor.update(update_plan(self._entries()))

    def _entries(self) -> list[Any]:
        entries = []
        for step in self.steps:
            step_id = str(step.get("id", ""))
            text = str(step.get("description") or step.get("command") or step_id)
            entries.append(plan_entry(text, status=self.status.get(step_id, "pending")))
        return entries
