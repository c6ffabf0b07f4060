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
        self.plan = PlanView()

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
        seen = self.plan.see(
            event.type, getattr(event, "plan", None), getattr(event, "step_id", None)
        )
        if seen:
            self.editor.update(update_plan(self.plan.entries()))


class PlanView:
    """Plan mode's steps as the ACP plan: the steps ``plan_started`` and ``plan_revised``
    give, each pending, in progress or completed as ``step_started`` and ``step_finished``
    say. Fed the live events (``Presenter``) or the recorded ones (``localhand.acp.replay``)."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.status: dict[str, PlanEntryStatus] = {}

    def see(self, kind: str, plan: Any, step_id: Any) -> bool:
        """Take one event in (its type, its ``plan``, its ``step_id``); whether it was a plan
        event, so that the plan shown changed."""
        if kind in ("plan_started", "plan_revised") and isinstance(plan, dict):
            self.steps = [s for s in plan.get("steps", []) if isinstance(s, dict)]
        elif kind == "step_started":
            self.status[str(step_id or "")] = "in_progress"
        elif kind == "step_finished":
            self.status[str(step_id or "")] = "completed"
        else:
            return False
        return True

    def entries(self) -> list[Any]:
        entries = []
        for step in self.steps:
            step_id = str(step.get("id", ""))
            text = str(step.get("description") or step.get("command") or step_id)
            entries.append(plan_entry(text, status=self.status.get(step_id, "pending")))
        return entries
