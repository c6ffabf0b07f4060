"""The real command line, in a subprocess, against the fake Ollama server over a real socket."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.testing import FakeOllama
from workspaces import example_copy

TASK = "Fix the bug in calc.py so check_calc.py passes"


def tool_call(name: str, **arguments: object) -> dict:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


FIX = [
    tool_call("read_file", path="calc.py"),
    tool_call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
    tool_call("run_command", command="python3 check_calc.py"),
    {"content": "Fixed add(): it subtracted instead of adding. check_calc.py passes."},
]


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return example_copy("calc", tmp_path / "demo")


def test_run_fixes_the_demo_and_prints_the_result(demo: Path, tmp_path: Path) -> None:
    with FakeOllama(script=FIX, models={"qwen3:8b": {}}) as server:
        done = localhand(
            "run",
            TASK,
            "--workspace",
            str(demo),
            "--model",
            "qwen3:8b",
            "--verify",
            "python3 check_calc.py",
            "--json",
            host=server.url,
            cwd=tmp_path,
        )
        chats = [r for r in server.requests if r.path == "/api/chat"]
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == "pass"
    assert result["termination_reason"] == "final_answer"
    assert result["files_modified"] == ["calc.py"]
    assert result["iterations_used"] == 4
    assert result["model_used"] == "qwen3:8b"
    assert result["verification"][0]["passed"] is True
    assert result["tokens_in"] > 0 and result["tokens_out"] > 0
    assert result["error"] is None
    assert "return a + b" in (demo / "calc.py").read_text()
    assert len(chats) == 4
    for request in chats:
        assert request.body["stream"] is False
        assert request.body["options"]["num_ctx"] >= 2048
        assert {t["function"]["name"] for t in request.body["tools"]} >= {
            "read_file",
            "run_command",
        }
    assert done.stdout.count("\n") == 1, "--json prints only the Result"
    # The run was recorded, event by event, in the store (LOCALHAND_DB, set by conftest).
    listed = localhand("runs", "--json", host=server.url, cwd=tmp_path)
    (run,) = json.loads(listed.stdout)
    assert (run["task_id"], run["status"], run["iterations"]) == (result["task_id"], "pass", 4)
    shown = localhand("show", "last", host=server.url, cwd=tmp_path)
    assert shown.stdout.count("edit_file") == 1 and "pass (final_answer)" in shown.stdout


def test_live_view_shows_each_tool_call(demo: Path, tmp_path: Path) -> None:
    with FakeOllama(script=FIX, models={"qwen3:8b": {}}) as server:
        done = localhand(
            "run",
            TASK,
            "--workspace",
            str(demo),
            "--model",
            "qwen3:8b",
            "--verify",
            "python3 check_calc.py",
            host=server.url,
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    for name in ("read_file", "edit_file", "run_command"):
        assert name in done.stderr
    assert "pass" in done.stderr
    assert done.stdout.startswith("Fixed add()")


def test_missing_model_says_to_pull_it(demo: Path, tmp_path: Path) -> None:
    with FakeOllama(script=[], models={"llama3.1:8b": {}}) as server:
        done = localhand(
            "run",
            TASK,
            "--workspace",
            str(demo),
            "--model",
            "qwen3:8b",
            "--backend",
            "ollama",
            "--json",
            host=server.url,
            cwd=tmp_path,
        )
    assert done.returncode == 2
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == "error"
    assert "ollama pull qwen3:8b" in result["error"]
    assert "Traceback" not in done.stderr


def test_server_down_names_ollama_host(demo: Path, tmp_path: Path) -> None:
    done = localhand(
        "run",
        TASK,
        "--workspace",
        str(demo),
        "--max-iterations",
        "2",
        "--backend",
        "ollama",
        host="http://127.0.0.1:9",
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "OLLAMA_HOST" in done.stderr
    assert "Traceback" not in done.stderr


def test_bad_usage_exits_2_without_traceback(tmp_path: Path) -> None:
    done = localhand(
        "run", TASK, "--workspace", str(tmp_path / "nope"), host="http://127.0.0.1:9", cwd=tmp_path
    )
    assert done.returncode == 2
    assert "not a directory" in done.stderr
    done = localhand("run", TASK, "--tier", "huge", host="http://127.0.0.1:9", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
