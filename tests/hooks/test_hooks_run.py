"""The user's hooks in a real run: a scripted model, real commands in the run's sandbox, the
tool results the model reads next and the ``hook_ran`` events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localhand.config.settings import Settings
from localhand.errors import ToolError
from localhand.events import EventBus, EventLog
from localhand.hooks.config import hooks_from_toml
from localhand.models.scripted import ScriptedModel, call
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.types import Result
from workspaces import workspace_with


def run_with_hooks(
    workspace: Path, hooks: dict[str, Any], script: list[Any], **settings: Any
) -> tuple[Result, ScriptedModel, EventLog]:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    model = ScriptedModel(script)
    task = Task("Change the notes", workspace=workspace, agentic=True)
    configured = Settings(hooks=hooks_from_toml(hooks, "config.toml"), **settings)
    return run_task(task, configured, bus=bus, model=model), model, log


def tool_results(model: ScriptedModel) -> list[str]:
    """The tool results the model was sent, in order (from its last request)."""
    last = model.calls[-1].messages
    return [m["content"] for m in last if m["role"] == "tool"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return workspace_with(tmp_path / "ws", {"notes.txt": "keep me\n"})


def test_a_pre_tool_hook_that_exits_2_blocks_the_call_and_its_stderr_reaches_the_model(
    workspace: Path,
) -> None:
    guard = (
        'input=$(cat); case "$input" in *notes.txt*) '
        'echo "notes.txt is frozen; write elsewhere" >&2; echo "not for the model"; exit 2;; '
        "esac"
    )
    hooks = {"pre_tool": [{"command": guard, "match": "write_file|edit_file"}]}
    script = [
        call("write_file", path="notes.txt", content="overwritten\n"),
        call("write_file", path="other.txt", content="fine\n"),
        "done",
    ]
    result, model, log = run_with_hooks(workspace, hooks, script)

    assert (workspace / "notes.txt").read_text() == "keep me\n", "the blocked write never ran"
    assert (workspace / "other.txt").read_text() == "fine\n", "a call the hook lets through runs"
    blocked, _allowed = tool_results(model)
    assert "Blocked by the user's pre_tool hook" in blocked
    assert "notes.txt is frozen; write elsewhere" in blocked
    assert "not for the model" not in blocked, "the reason is the hook's stderr alone"
    ran = log.of_type("hook_ran")
    assert [(e.hook, e.blocked, e.exit_code, e.tool_name) for e in ran] == [
        ("pre_tool", True, 2, "write_file"),
        ("pre_tool", False, 0, "write_file"),
    ]
    (first_call, _) = log.of_type("tool_call")
    assert not first_call.ok
    assert result.files_modified == ["other.txt"]


def test_the_hook_reads_the_call_as_json_on_its_stdin(workspace: Path) -> None:
    hooks = {"pre_tool": [{"command": "cat >&2; exit 2"}]}
    script = [call("read_file", path="notes.txt"), "done"]
    _result, model, _log = run_with_hooks(workspace, hooks, script)

    (blocked,) = tool_results(model)
    seen = json.loads(blocked.split("The hook's reason:\n", 1)[1])
    assert seen["hook"] == "pre_tool"
    assert (seen["tool"], seen["args"]) == ("read_file", {"path": "notes.txt"})
    assert seen["path"] == "notes.txt"
    assert seen["workspace"] == str(workspace.resolve())
    assert seen["run_id"], "the store's run id, or the task id without a store"


def test_a_post_edit_hook_s_output_is_in_the_edit_s_result(workspace: Path) -> None:
    (workspace / "lint.sh").write_text(
        'grep -n "TODO" "$1" && { echo "lint: remove the TODO in $1"; exit 1; }; exit 0\n'
    )
    hooks = {"post_edit": [{"command": "bash lint.sh {path}", "path": "*.py"}]}
    script = [
        call("write_file", path="app.py", content="x = 1  # TODO\n"),
        call("write_file", path="readme.md", content="TODO later\n"),  # not *.py: no hook
        call("read_file", path="app.py"),  # not an edit: no hook
        "done",
    ]
    _, model, log = run_with_hooks(workspace, hooks, script)

    edited, markdown, read = tool_results(model)
    assert '[post_edit hook `bash lint.sh "${LOCALHAND_PATH}"`: exit 1]' in edited
    assert "lint: remove the TODO in app.py" in edited
    assert "1:x = 1  # TODO" in edited
    assert "hook" not in markdown and "hook" not in read
    (ran,) = log.of_type("hook_ran")
    assert (ran.hook, ran.exit_code) == ("post_edit", 1)
    assert ran.command == 'bash lint.sh "${LOCALHAND_PATH}"', "the command line as it ran"
    assert "lint: remove the TODO" in ran.output_summary


def test_placeholders_are_shell_quoted(workspace: Path) -> None:
    hooks = {"post_tool": [{"command": "printf '<%s>' {path} {tool}"}]}
    name = "odd name; touch pwned.txt.txt"
    script = [call("write_file", path=name, content="x\n"), "done"]
    _, model, _ = run_with_hooks(workspace, hooks, script)

    (result,) = tool_results(model)
    assert f"<{name}><write_file>" in result
    assert not (workspace / "pwned.txt.txt").exists()


def test_a_post_tool_hook_that_passes_in_silence_adds_nothing(workspace: Path) -> None:
    hooks = {"post_tool": [{"command": "true", "match": "read_*"}]}
    script = [call("read_file", path="notes.txt"), call("list_directory", path="."), "done"]
    _, model, log = run_with_hooks(workspace, hooks, script)

    read, listed = tool_results(model)
    assert "hook" not in read and "hook" not in listed
    assert [e.tool_name for e in log.of_type("hook_ran")] == ["read_file"]


def test_a_hook_that_runs_too_long_is_killed_and_recorded_as_timed_out(workspace: Path) -> None:
    hooks = {"post_tool": [{"command": "echo started; sleep 30", "timeout_s": 0.5}]}
    script = [call("read_file", path="notes.txt"), "done"]
    result, model, log = run_with_hooks(workspace, hooks, script)

    (read,) = tool_results(model)
    assert "timed out after 0.5 s and was killed" in read
    (ran,) = log.of_type("hook_ran")
    assert (ran.timed_out, ran.exit_code, ran.blocked) == (True, None, False)
    assert ran.duration_ms < 10_000
    assert result.termination_reason == "final_answer"


def test_a_pre_tool_hook_that_fails_otherwise_lets_the_call_run(workspace: Path) -> None:
    hooks = {"pre_tool": [{"command": "echo oops >&2; exit 1"}]}
    script = [call("write_file", path="new.txt", content="x\n"), "done"]
    _, _, log = run_with_hooks(workspace, hooks, script)

    assert (workspace / "new.txt").exists()
    (ran,) = log.of_type("hook_ran")
    assert (ran.exit_code, ran.blocked) == (1, False)


def test_a_stop_hook_reads_the_result_before_it_is_announced(workspace: Path) -> None:
    hooks = {"stop": [{"command": "cat > stop.json; echo recorded"}]}
    script = [call("write_file", path="new.txt", content="x\n"), "All done."]
    _result, _, log = run_with_hooks(workspace, hooks, script)

    seen = json.loads((workspace / "stop.json").read_text())
    assert seen["hook"] == "stop"
    assert seen["result"]["output"] == "All done."
    assert seen["result"]["files_modified"] == ["new.txt"]
    types = [event.type for event in log.events]
    assert types.index("hook_ran") < types.index("task_finished")
    (ran,) = log.of_type("hook_ran")
    assert (ran.hook, ran.tool_name, ran.output_summary) == ("stop", None, "recorded")


def test_a_simple_task_runs_the_stop_hook_too(workspace: Path) -> None:
    """One streamed answer and no tools: no call to hook, but the run ends, so ``stop`` runs,
    before the Result is announced, as it does after the tool loop."""
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    hooks = hooks_from_toml({"stop": [{"command": "cat > stop.json"}]}, "config.toml")
    task = Task("What is 2 + 2?", workspace=workspace, agentic=False)
    run_task(task, Settings(hooks=hooks), bus=bus, model=ScriptedModel(["4"]))

    seen = json.loads((workspace / "stop.json").read_text())
    assert seen["result"]["output"] == "4"
    types = [event.type for event in log.events]
    assert "tool_call" not in types
    assert types.index("hook_ran") < types.index("task_finished")


def test_hooks_run_in_the_run_s_sandbox(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    hooks = {"post_tool": [{"command": f"echo no > {outside}; echo $?"}]}
    script = [call("read_file", path="notes.txt"), "done"]
    _, model, _log = run_with_hooks(workspace, hooks, script, sandbox="required")

    assert not outside.exists(), "a hook writes only the workspace, like run_command"
    (read,) = tool_results(model)
    assert "[post_tool hook" in read


def test_no_hooks_no_wrapper(workspace: Path) -> None:
    result, _model, log = run_with_hooks(workspace, {}, [call("read_file", path="notes.txt"), "ok"])
    assert log.of_type("hook_ran") == []
    assert result.output == "ok"


def test_a_hook_that_cannot_start_does_not_stop_the_run_and_the_model_is_told(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_sandbox(*args: Any, **kwargs: Any) -> None:
        raise ToolError("network isolation is on, but this system does not allow it")

    monkeypatch.setattr("localhand.hooks.command.run_shell", no_sandbox)
    hooks = {"post_tool": [{"command": "touch ran.txt"}]}
    script = [call("read_file", path="notes.txt"), "done"]
    result, model, log = run_with_hooks(workspace, hooks, script)

    (read,) = tool_results(model)
    assert "[post_tool hook `touch ran.txt`: could not run]" in read
    assert "network isolation is on" in read
    (ran,) = log.of_type("hook_ran")
    assert ran.exit_code is None and "could not run" in ran.output_summary
    assert result.output == "done"
