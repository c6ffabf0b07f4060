"""A check the model ran is evidence too (issue 39): a run given no check is graded by the
project's check the model ran, run again at the end under the check guard, through the real
loop with a scripted model and through the real command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_helpers import localhand
from localhand import Agent
from localhand.events import EventBus, EventLog
from localhand.evidence.baseline import Baseline
from localhand.evidence.verify import CommandCheck
from localhand.models.scripted import ScriptedModel, call
from localhand.testing import FakeOllama
from localhand.tools import default_tools
from localhand.types import Result
from pytest_checks import PLUGINS_OFF
from workspaces import BUGGY, workspace_with

PYTEST = "python3 -m pytest -q"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
# pytest.ini: the project has no use for the plugins of localhand's own tests, which its
# checks would load at each start (``pytest_checks.PLUGINS_OFF``)
PROJECT = {
    "calc.py": BUGGY,
    "tests/test_calc.py": TEST,
    "pytest.ini": f"[pytest]\naddopts = {PLUGINS_OFF}\n",
}
FIX = call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b")
TASK = "Fix add() in calc.py"


def run(workspace: Path, steps: list[Any], **kwargs: Any) -> tuple[Result, EventLog]:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    result = Agent(ScriptedModel([*steps, "Done."]), workspace, bus=bus, **kwargs).run(TASK)
    return result, log


def warnings(log: EventLog) -> list[str]:
    return [event.message for event in log.of_type("warning")]


def test_the_check_the_model_ran_grades_the_run(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", PROJECT)
    result, log = run(workspace, [FIX, call("run_command", command="python -m pytest -k nothing")])

    assert (result.status, result.adopted_check) == ("pass", PYTEST)
    assert result.to_dict()["adopted_check"] == PYTEST
    assert [(check.name, check.passed) for check in result.verification] == [(PYTEST, True)]
    assert "1 passed" in result.verification[0].output_tail  # the whole suite, not -k nothing
    (verification,) = log.of_type("verification")
    assert verification.checks[0]["name"] == PYTEST
    assert result.suggested_check is None


def test_the_check_the_model_ran_fails_a_run_whose_code_is_wrong(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", PROJECT)
    result, _ = run(workspace, [call("run_command", command="pytest tests/test_calc.py")])

    assert (result.status, result.adopted_check) == ("fail", PYTEST)
    assert result.remaining == [PYTEST]


def test_a_check_script_the_model_wrote_is_never_adopted(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", {"calc.py": BUGGY})
    steps = [
        call("write_file", path="check.sh", content="exit 0\n"),
        call("run_command", command="sh check.sh"),
    ]
    result, log = run(workspace, steps)

    assert (result.status, result.adopted_check) == ("unverified", None)
    assert "adopted_check" not in result.to_dict()
    assert result.verification == []
    assert any("`sh check.sh`, was not adopted" in w and "check.sh)" in w for w in warnings(log))


def test_a_test_the_model_changed_keeps_its_check_from_being_adopted(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", PROJECT)
    weaken = call("write_file", path="tests/test_calc.py", content="def test_add():\n    pass\n")
    result, log = run(workspace, [weaken, call("run_command", command="python3 -m pytest")])

    assert (result.status, result.adopted_check) == ("unverified", None)
    assert result.suggested_check == PYTEST
    assert any("tests/test_calc.py" in w for w in warnings(log))


def test_an_existing_check_script_is_adopted_though_the_task_does_not_name_it(
    tmp_path: Path,
) -> None:
    check = "from calc import add\nassert add(2, 3) == 5\n"
    workspace = workspace_with(tmp_path / "ws", {"calc.py": BUGGY, "check_calc.py": check})
    result, _ = run(
        workspace, [FIX, call("run_command", command=f"cd {workspace} && python check_calc.py")]
    )
    assert (result.status, result.adopted_check) == ("pass", "python3 check_calc.py")


def test_a_command_that_was_refused_is_not_adopted(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", PROJECT)
    tools = default_tools(workspace, policy="always")  # every command asks; nobody approves
    result, _ = run(workspace, [FIX, call("run_command", command="python -m pytest")], tools=tools)
    assert (result.status, result.adopted_check) == ("unverified", None)


def test_a_command_that_runs_no_check_is_not_adopted(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", PROJECT)
    result, _ = run(workspace, [FIX, call("run_command", command="echo pytest")])
    assert (result.status, result.adopted_check) == ("unverified", None)
    assert result.suggested_check == PYTEST


def test_a_given_check_is_never_replaced(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", PROJECT)
    given = CommandCheck("python3 -c 'import calc; assert calc.add(1, 1) == 2'")
    result, _ = run(workspace, [FIX, call("run_command", command="pytest")], checks=[given])
    assert result.adopted_check is None
    assert [check.name for check in result.verification] == [given.command]


def test_the_check_verify_auto_would_choose_is_kept_from_the_start(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", PROJECT)
    baseline = Baseline(workspace, "t1", (), TASK)
    given = Baseline(workspace, "t2", [CommandCheck("make check")], TASK)
    nothing = Baseline(workspace_with(tmp_path / "empty", {"a.txt": ""}), "t3", (), TASK)
    try:
        assert baseline.guard.commands == [PYTEST]
        assert baseline.ready().guard.keeps is not None  # its files are kept, as a given check's
        assert given.guard.commands == ["make check"]
        assert nothing.guard.commands == [] and nothing.ready().guard.keeps is None
    finally:
        for each in (nothing, given, baseline):  # last made, first closed: each restores
            each.close()  # the holds its thread collected before it (a context variable)


# -- the command line, against the fake Ollama over a real socket -----------------------------


def tool_call(name: str, **arguments: object) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


def cli_run(tmp_path: Path, workspace: Path, script: list[dict[str, Any]], *flags: str) -> Any:
    with FakeOllama(script=[*script, {"content": "Done."}], models={"qwen3:8b": {}}) as server:
        return localhand(
            "run", TASK, "--workspace", str(workspace), "--model", "qwen3:8b", *flags,
            host=server.url, cwd=tmp_path,
        )  # fmt: skip


def test_cli_exits_0_when_the_check_the_model_ran_passes(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", PROJECT)
    fix = tool_call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b")
    done = cli_run(
        tmp_path, workspace, [fix, tool_call("run_command", command="pytest -q")], "--json"
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["status"], result["adopted_check"]) == ("pass", PYTEST)


def test_cli_exits_3_and_says_what_would_check_a_run_whose_check_was_its_own(
    tmp_path: Path,
) -> None:
    workspace = workspace_with(tmp_path / "ws", {"calc.py": BUGGY, "pytest.ini": "[pytest]\n"})
    script = [
        tool_call("write_file", path="check.sh", content="exit 0\n"),
        tool_call("run_command", command="sh check.sh"),
    ]
    done = cli_run(tmp_path, workspace, script)
    assert done.returncode == 3, done.stderr
    assert "? not verified: no check was given, run or adopted" in done.stderr
    assert f"`{PYTEST}` would check it" in done.stderr
    assert "`sh check.sh`, was not adopted" in done.stderr
