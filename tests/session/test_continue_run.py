"""``localhand run --continue RUN``: the real command line against the fake Ollama; the
continued run sends the earlier conversation unchanged (the server's cached prefix), in the
same workspace, and names its parent in the store, ``show`` and the library."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.config.settings import load_settings
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.store import open_store
from localhand.testing import FakeOllama
from workspaces import example_copy


def tool_call(name: str, **arguments: object) -> dict:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


FIRST = [
    tool_call("read_file", path="calc.py"),
    {"content": "add() subtracts instead of adding."},
]
SECOND = [
    tool_call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
    {"content": "Fixed."},
]


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return example_copy("calc", tmp_path / "demo")


def first_run(server: FakeOllama, demo: Path, cwd: Path) -> dict:
    done = localhand(
        "run",
        "Find the bug in calc.py",
        "--workspace",
        str(demo),
        "--model",
        "qwen3:8b",
        "--agentic",
        "--max-iterations",
        "7",
        "--json",
        host=server.url,
        cwd=cwd,
    )
    assert done.returncode == 3, done.stderr  # unverified: no checks
    return json.loads(done.stdout)


def test_continue_last_sends_the_earlier_conversation_first(demo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with FakeOllama(script=FIRST + SECOND, models={"qwen3:8b": {}}) as server:
        first = first_run(server, demo, tmp_path)
        earlier = server.chat_requests
        done = localhand(
            "run",
            "--continue",
            "last",
            "Now fix it",
            "--verify",
            "python3 check_calc.py",
            "--json",
            host=server.url,
            cwd=elsewhere,  # the workspace is the earlier run's, not the current directory
        )
        later = server.chat_requests[len(earlier) :]
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["status"], result["files_modified"]) == ("pass", ["calc.py"])
    assert result["model_used"] == "qwen3:8b"
    assert "return a + b" in (demo / "calc.py").read_text()
    last = earlier[-1].body["messages"]
    sent = later[0].body["messages"]
    assert sent[: len(last)] == last, "the earlier messages, unchanged: the cached prefix"
    assert sent[len(last)]["role"] == "assistant"
    assert sent[len(last)]["content"] == "add() subtracts instead of adding."
    assert sent[len(last) + 1 :] == [{"role": "user", "content": "Now fix it"}]
    assert later[0].body["model"] == "qwen3:8b"
    with open_store() as store:
        runs = store.runs()
        child, parent = runs[0], runs[1]
        assert parent.task_id == first["task_id"] and child.task_id == result["task_id"]
        assert (child.continues, parent.continues) == (parent.id, None)
        assert child.workspace == str(demo)
        spec = store.task_spec(child.task_id)
    assert spec["limits"]["iterations"] == 7, "the earlier run's settings carry on"
    shown = localhand("show", child.id, cwd=tmp_path)
    assert f"continues {parent.id}" in shown.stdout


def test_the_library_and_its_errors(demo: Path, tmp_path: Path) -> None:
    with FakeOllama(script=FIRST + SECOND, models={"qwen3:8b": {}}) as server:
        first_run(server, demo, tmp_path)
        with open_store() as store:
            (parent,) = store.runs()
        settings = load_settings().with_overrides(host=server.url)
        given = Task(description="Now fix it", workspace=tmp_path)
        result = run_task(given, settings, continue_from=parent.id[:8])
        (first_request, *_) = server.chat_requests[len(FIRST) :]
    assert result.files_modified == ["calc.py"]
    assert first_request.body["messages"][-1] == {"role": "user", "content": "Now fix it"}
    with open_store() as store:
        assert store.runs()[0].continues == parent.id

    unknown = localhand("run", "--continue", "nosuchrun", "more", cwd=tmp_path)
    assert unknown.returncode == 2 and "no run 'nosuchrun'" in unknown.stderr
    with_workspace = localhand("run", "--continue", "last", "x", "-w", str(demo), cwd=tmp_path)
    assert with_workspace.returncode == 2 and "drop --workspace" in with_workspace.stderr
    shutil.rmtree(demo)
    gone = localhand("run", "--continue", parent.id, "more", cwd=tmp_path)
    assert gone.returncode == 2 and "workspace" in gone.stderr and "is gone" in gone.stderr
    for done in (unknown, with_workspace, gone):
        assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_plan_run_cannot_be_continued(tmp_path: Path) -> None:
    demo = example_copy("plan", tmp_path / "demo")
    localhand("plan", "plan.yaml", "--workspace", str(demo), host="http://127.0.0.1:9", cwd=demo)
    done = localhand("run", "--continue", "last", "more", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "ran a plan" in done.stderr and "Traceback" not in done.stderr


def test_a_simple_answer_is_continued_with_the_tools(demo: Path, tmp_path: Path) -> None:
    script = [
        "calc.py has add(), which subtracts.",
        tool_call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
        "Fixed.",
    ]
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        asked = localhand(
            "run",
            "What does calc.py do?",
            "-w",
            str(demo),
            "--model",
            "qwen3:8b",
            "--simple",
            "--json",
            host=server.url,
            cwd=tmp_path,
        )
        assert asked.returncode == 0, asked.stderr
        done = localhand(
            "run", "--continue", "last", "Fix it", "--json", host=server.url, cwd=tmp_path
        )
        first, continued = server.chat_requests[0], server.chat_requests[1]
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["files_modified"] == ["calc.py"]
    earlier = first.body["messages"]
    sent = continued.body["messages"]
    assert sent[: len(earlier)] == earlier and continued.body["tools"]
    assert sent[len(earlier) :] == [
        {"role": "assistant", "content": "calc.py has add(), which subtracts."},
        {"role": "user", "content": "Fix it"},
    ]
