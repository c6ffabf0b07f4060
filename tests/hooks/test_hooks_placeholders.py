"""``{path}`` never pastes the model's file name into a hook's shell line: real files with
hostile names, written by a scripted model, and real hooks that run on them in the sandbox."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import localhand
from localhand.config.settings import Settings
from localhand.errors import ConfigError
from localhand.events import EventBus, EventLog
from localhand.hooks.config import hooks_from_toml
from localhand.hooks.placeholders import expanded
from localhand.models.scripted import ScriptedModel, call
from localhand.run.task import Task
from localhand.session.api import run_task
from workspaces import user_file

HOSTILE = ["$(touch pwned).py", '";touch pwned;".py', "`touch pwned`.py", "'$(touch pwned)'.py"]
"""Names that run ``touch pwned`` wherever a hook's line holds their text, quoted or not."""
PLACES = [
    "printf '<%s>' {path}",
    "printf '<%s>' \"{path}\"",
    "printf '<%s>' \"./{path}\"",
    "printf '<%s>' \"$(printf %s {path})\"",
    "printf '<%s>' \"`printf %s {path}`\"",
    "(printf '<%s>' {path})",
]
"""Where a user may put the placeholder: bare, in double quotes, inside a command
substitution, backticks or a subshell."""

READ_PATH = '\'import json, sys; print("json<%s>" % json.load(sys.stdin)["path"])\''
"""A hook's Python that prints the path of the JSON on its stdin."""


def run_with_hooks(
    workspace: Path, hooks: dict[str, Any], script: list[Any]
) -> tuple[ScriptedModel, EventLog]:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    model = ScriptedModel(script)
    task = Task("Write the files", workspace=workspace, agentic=True)
    run_task(task, Settings(hooks=hooks_from_toml(hooks, "config.toml")), bus=bus, model=model)
    return model, log


def tool_results(model: ScriptedModel) -> list[str]:
    """The tool results the model was sent, in order (from its last request)."""
    return [m["content"] for m in model.calls[-1].messages if m["role"] == "tool"]


@pytest.mark.parametrize("place", PLACES)
def test_no_file_name_runs_code_wherever_the_placeholder_stands(tmp_path: Path, place: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    hooks = {"post_edit": [{"command": place}]}
    script = [*(call("write_file", path=name, content="x\n") for name in HOSTILE), "done"]
    model, log = run_with_hooks(workspace, hooks, script)

    assert sorted(p.name for p in workspace.iterdir()) == sorted(HOSTILE), "each file written"
    assert not (workspace / "pwned").exists(), "no name ran as code"
    results = tool_results(model)
    for name, result in zip(HOSTILE, results, strict=True):
        shown = f"./{name}" if "./" in place else name
        assert f"<{shown}>" in result, "the hook saw the name itself, as one word"
    assert {e.exit_code for e in log.of_type("hook_ran")} == {0}


def test_the_hook_reads_the_path_in_its_environment_and_its_json(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    name = "-rf $(touch pwned).txt"
    hooks = {
        "post_edit": [
            {"command": 'printf "env<%s>" "$LOCALHAND_PATH"'},
            {"command": f"python3 -c {READ_PATH}"},
        ]
    }
    model, _ = run_with_hooks(workspace, hooks, [call("write_file", path=name, content="x"), "ok"])

    (result,) = tool_results(model)
    assert f"env<./{name}>" in result, "an option-like name is given as ./NAME"
    assert f"json<{name}>" in result, "the JSON holds the call's own path"
    assert not (workspace / "pwned").exists()


@pytest.mark.parametrize(
    "command", ["ruff check '{path}'", "echo $'{tool}'", "sh -c 'ruff check {path}'"]
)
def test_a_placeholder_in_single_quotes_is_refused_saying_how_to_write_it(command: str) -> None:
    with pytest.raises(ConfigError) as refused:
        hooks_from_toml({"post_edit": [{"command": command}]}, "config.toml")
    said = str(refused.value)
    assert "hooks.post_edit[1].command in config.toml" in said
    assert "inside single quotes" in said and "bare or in double quotes" in said


def test_single_quotes_elsewhere_in_the_line_are_fine() -> None:
    line = "awk '{print $1}' {path} # don't mind {path} here"
    assert expanded(line) == "awk '{print $1}' \"${LOCALHAND_PATH}\" # don't mind {path} here"


def test_the_command_line_refuses_such_a_hook_without_a_traceback(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    user_file(xdg, "[[hooks.post_edit]]\ncommand = \"ruff check '{path}'\"\n")
    done = localhand("config", env={**os.environ, "XDG_CONFIG_HOME": str(xdg)}, cwd=tmp_path)
    assert done.returncode == 2
    assert "inside single quotes" in done.stderr and "Traceback" not in done.stderr
