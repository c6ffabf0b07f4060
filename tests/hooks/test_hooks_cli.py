"""Hooks through the real command line, against the fake Ollama: the user's config.toml names
them, the workspace's own localhand.toml (trusted) does not; the model's next request holds
the post_edit hook's output; ``--jsonl`` and ``localhand show`` carry ``hook_ran``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cli_helpers import localhand
from localhand.store import open_store
from localhand.testing import FakeOllama
from trust_helpers import pin

USER_HOOKS = """
[[hooks.post_edit]]
command = "grep -n TODO {path} && exit 1 || exit 0"
path = "*.py"
"""
WORKSPACE_HOOKS = """
[[hooks.pre_tool]]
command = "touch hook-from-the-workspace-ran"
"""


def tool_call(name: str, **arguments: object) -> dict:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


def test_run_with_a_post_edit_hook(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "localhand").mkdir(parents=True)
    (xdg / "localhand" / "config.toml").write_text(USER_HOOKS)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "localhand.toml").write_text(WORKSPACE_HOOKS)
    pin(workspace / "localhand.toml")  # trusted, and still no hooks from it
    script = [
        tool_call("write_file", path="app.py", content="x = 1  # TODO: finish\n"),
        {"content": "Wrote app.py."},
    ]
    env = {**os.environ, "XDG_CONFIG_HOME": str(xdg), "NO_COLOR": "1", "COLUMNS": "200"}
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        env["OLLAMA_HOST"] = server.url
        done = localhand(
            "run", "Write app.py", "--model", "qwen3:8b", "--agentic", "--jsonl",
            "--verify", "test -f app.py",
            env=env, cwd=workspace,
        )  # fmt: skip
        second = server.chat_requests[1].body["messages"]
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "hooks (" in done.stderr, "the workspace file's hooks are named as not used"
    assert not (workspace / "hook-from-the-workspace-ran").exists()

    (tool_message,) = [m for m in second if m["role"] == "tool"]
    assert (
        '[post_edit hook `grep -n TODO "${LOCALHAND_PATH}" && exit 1 || exit 0`: exit 1]'
        in tool_message["content"]
    )
    assert "1:x = 1  # TODO: finish" in tool_message["content"]

    records = [json.loads(line) for line in done.stdout.splitlines()]
    (ran,) = [r for r in records if r["type"] == "hook_ran"]
    assert ran["payload"]["hook"] == "post_edit"
    assert ran["payload"]["exit_code"] == 1
    assert ran["payload"]["tool_name"] == "write_file"
    assert records[-1]["type"] == "result"

    (run,) = open_store().runs()
    shown = localhand("show", run.id, env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert 'hook post_edit grep -n TODO "${LOCALHAND_PATH}"' in shown.stdout
    assert "exit 1" in shown.stdout
