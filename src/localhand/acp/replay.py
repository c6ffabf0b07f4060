"""``session/load``'s replay: a reopened session's conversation sent to the editor again, as
the ACP asks, before the load is answered. Each of the session's runs, read back from the
store, becomes what the editor showed while it ran: the prompt as a ``user_message_chunk``,
the model's thinking and text as thought and message chunks, each tool call as one
``tool_call`` already completed (or failed) with its result's summary, a plan's steps as the
ACP plan with how far they got and each step's command as its tool call, why the plan stopped,
and how the run ended (``localhand.acp.presenter.PlanView``, as the live run showed them)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from acp import (
    start_tool_call,
    text_block,
    tool_content,
    update_user_message_text,
)

from localhand.acp.editor import Editor
from localhand.acp.presenter import PlanView, reply_updates
from localhand.acp.tools import KINDS, title_of
from localhand.errors import ConfigError
from localhand.safety.approval.approver import escape, headline
from localhand.store import open_store
from localhand.store.records import StoredEvent
from localhand.types import ToolCall


def replay(editor: Editor, runs: Iterable[str], db: Path | None) -> None:
    """Send ``runs`` (run ids, oldest first) to the editor, from the run's thread (each update
    waits for the editor, as a live run's do). A run the store no longer has is left out."""
    with open_store(db) as store:
        for run_id in runs:
            try:
                info = store.run(run_id)
            except ConfigError as exc:
                print(f"localhand acp: not shown again: {exc}", file=sys.stderr)
                continue
            for update in run_updates(info.description, store.events(run_id), editor.next_call_id):
                editor.update(update)


def run_updates(
    prompt: str, events: Iterable[StoredEvent], call_id: Callable[[], str]
) -> list[Any]:
    """One recorded run as ``session/update``s (see the module docstring); ``call_id`` gives
    each tool call its id in the session."""
    updates: list[Any] = [update_user_message_text(prompt)]
    plan = PlanView(call_id)
    for event in events:
        data = event.data
        if event.type == "model_reply":
            thinking, content = str(data.get("thinking") or ""), str(data.get("content") or "")
            updates += reply_updates(thinking, content)
        elif event.type == "tool_call":
            updates.append(_tool_call(data, call_id()))
        else:  # the plan's steps and how the run ended, as the live run showed them
            seen = plan.see(event.type, data)
            updates += [u for u in seen if u.session_update != "plan"]
    if plan.steps:
        updates.insert(1, plan.update())  # the plan as it ended, where it shows: above its run
    return updates


def _tool_call(data: dict[str, Any], call_id: str) -> Any:
    """A recorded call as the editor saw it end: its title from its arguments (their summary,
    read back when it is whole JSON), its result's summary as its content."""
    name = str(data.get("tool_name") or "tool")
    summary = str(data.get("args_summary") or "")
    try:
        arguments = json.loads(summary)
    except ValueError:  # cut short in the summary
        arguments = None
    if isinstance(arguments, dict):
        title = title_of(ToolCall(name, arguments))
    else:
        title = f"{escape(name)} {headline(summary)}".strip()
    return start_tool_call(
        call_id,
        title,
        kind=KINDS.get(name, "other"),
        status="completed" if data.get("ok") else "failed",
        content=[tool_content(text_block(str(data.get("result_summary") or "")))],
        raw_input=arguments if isinstance(arguments, dict) else None,
    )
