"""How a run ends (``localhand.session.finish``): the loop hands back its outcome and one
function finishes it, in the order its docstring states, whichever door ran it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import localhand
from localhand.config.settings import Settings
from localhand.events import EventBus, EventLog, TaskFinished
from localhand.evidence.verify import CommandCheck
from localhand.hooks.config import hooks_from_toml
from localhand.models.scripted import ScriptedModel, call
from localhand.run.agent import ToolLoop
from localhand.run.task import Task
from localhand.session.agent import Agent
from localhand.session.api import run_task
from localhand.session.finish import finish

SCHEMA = {"type": "object", "properties": {"done": {"type": "boolean"}}, "required": ["done"]}
FINISHING = ("verification", "model_request", "model_reply", "hook_ran", "task_finished")


def test_a_door_finishes_in_the_stated_order_and_the_stop_hook_reads_the_announced_result(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    script: list[Any] = [
        call("write_file", path="new.txt", content="x\n"),
        "All done.",  # objected to: the check fails
        "All done.",
        json.dumps({"done": True}),  # the answer as JSON
    ]
    hooks = hooks_from_toml({"stop": [{"command": "cat > stop.json"}]}, "config.toml")
    task = Task("Write new.txt", workspace, id="t1", checks=(CommandCheck("false"),))
    result = run_task(
        task,
        Settings(hooks=hooks),
        bus=bus,
        model=ScriptedModel(script),
        follow_up_dir=tmp_path / "tasks",
        output_schema=SCHEMA,
    )

    last_call = max(i for i, e in enumerate(log.events) if e.type == "tool_call")
    ending = [e.type for e in log.events[last_call:] if e.type in FINISHING]
    assert ending[-5:] == list(FINISHING)
    assert (result.status, result.answer_json) == ("fail", {"done": True})
    assert result.follow_up_task is not None and Path(result.follow_up_task).is_file()
    seen = json.loads((workspace / "stop.json").read_text())["result"]
    (announced,) = log.of_type("task_finished")
    assert isinstance(announced, TaskFinished)
    assert seen == announced.result  # follow-up task, sandbox and JSON answer included


def test_the_loop_announces_nothing_and_the_public_agent_finishes_it(tmp_path: Path) -> None:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    checks = (CommandCheck("true"),)
    loop = ToolLoop(ScriptedModel([call("list_files"), "ok"]), tmp_path, bus=bus, checks=checks)
    outcome = loop.play("Look around")
    assert not {"verification", "task_finished"} & {e.type for e in log.events}

    result = finish(outcome)
    assert [e.type for e in log.events][-2:] == ["verification", "task_finished"]
    assert result.status == "pass" and result.sandbox is not None

    assert localhand.Agent is Agent
    again = Agent(ScriptedModel([call("list_files"), "ok"]), tmp_path, bus=bus, checks=checks)
    assert again.run("Look around").status == "pass"
    assert len(log.of_type("task_finished")) == 2
