"""Plan mode with the user's hooks: each step's command passes them as a run_command call
would; a pre_tool hook that exits 2 refuses the step, post hooks' output joins the step's
output, and the stop hooks read the plan's Result."""

from __future__ import annotations

import json
from pathlib import Path

from localhand.config.settings import Settings
from localhand.events import EventBus, EventLog
from localhand.hooks.config import hooks_from_toml
from localhand.session.api import run_plan


def test_a_step_a_pre_tool_hook_blocks_is_refused_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("keep\n")
    hooks = hooks_from_toml(
        {
            "pre_tool": [
                {"command": "grep -q 'rm ' && { echo 'no deleting here' >&2; exit 2; }; exit 0"}
            ],
            "post_tool": [{"command": "echo checked {tool}"}],
            "stop": [{"command": "cat > plan-result.json"}],
        },
        "config.toml",
    )
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    plan = {
        "goal": "tidy",
        "steps": [
            {"id": "make", "description": "make a file", "command": "echo made > made.txt"},
            {"id": "drop", "description": "drop one", "command": "rm keep.txt"},
        ],
    }
    result = run_plan(
        plan, tmp_path, Settings(hooks=hooks), mode="planner", bus=bus, policy="never"
    )

    assert (tmp_path / "made.txt").exists()
    assert (tmp_path / "keep.txt").exists(), "the blocked step never ran"
    assert result.termination_reason == "refused"
    finished = {e.step_id: e for e in log.of_type("step_finished")}
    assert "checked run_command" in finished["make"].output_tail
    assert "no deleting here" in (finished["drop"].refused or "")
    ran = [(e.hook, e.blocked) for e in log.of_type("hook_ran")]
    assert ran == [
        ("pre_tool", False),
        ("post_tool", False),
        ("pre_tool", True),
        ("stop", False),
    ]
    seen = json.loads((tmp_path / "plan-result.json").read_text())
    assert seen["result"]["termination_reason"] == "refused"
    types = [e.type for e in log.events]
    assert types.index("task_finished") > max(i for i, t in enumerate(types) if t == "hook_ran"), (
        "the stop hook ran before the Result was announced"
    )
