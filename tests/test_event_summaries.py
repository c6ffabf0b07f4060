"""What the timeline shows of a tool call: seed 001's cuts."""

from __future__ import annotations

import json
import time

from localhand.events import ToolCallEvent
from localhand.types import ToolCall, ToolResult


def test_args_summary_is_the_arguments_json_cut_at_200_characters() -> None:
    content = "x" * 500
    event = ToolCallEvent.of(
        ToolCall("write_file", {"path": "a.txt", "content": content}),
        ToolResult("y" * 500),
        task_id="t",
        iteration=1,
        started=time.perf_counter(),
    )
    whole = json.dumps({"path": "a.txt", "content": content})
    assert len(event.args_summary) == 200
    assert event.args_summary == whole[:199] + "…"
    assert len(event.result_summary) == 120


def test_a_short_call_is_shown_whole() -> None:
    event = ToolCallEvent.of(
        ToolCall("read_file", {"path": "calc.py"}),
        ToolResult("1| def add"),
        task_id="t",
        iteration=1,
        started=time.perf_counter(),
    )
    assert (event.args_summary, event.result_summary) == ('{"path": "calc.py"}', "1| def add")
