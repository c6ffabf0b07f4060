"""``--jsonl`` on run, plan and batch: the real command line in a subprocess, against the
fake Ollama; every line of stdout is parsed against the documented schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import localhand
from localhand.store import open_store
from localhand.testing import FakeOllama
from workspaces import example_copy

TOP_KEYS = {"schema", "type", "time", "run_id", "iteration", "payload"}


def tool_call(name: str, **arguments: object) -> dict:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


def parse_stream(stdout: str) -> list[dict[str, Any]]:
    """Every line of stdout, each checked against the schema (version 1)."""
    lines = stdout.splitlines()
    assert lines, "--jsonl printed nothing"
    records = []
    for number, text in enumerate(lines, 1):
        record = json.loads(text)  # any line that is not JSON fails here
        assert set(record) == TOP_KEYS, f"line {number}: {sorted(record)}"
        assert record["schema"] == 1
        assert isinstance(record["type"], str) and record["type"]
        assert isinstance(record["time"], float | int) and record["time"] > 1.6e9
        assert isinstance(record["run_id"], str) and record["run_id"]
        assert record["iteration"] is None or isinstance(record["iteration"], int)
        assert isinstance(record["payload"], dict)
        records.append(record)
    return records


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return example_copy("calc", tmp_path / "demo")


def test_run_prints_every_event_then_the_result(demo: Path, tmp_path: Path) -> None:
    script = [
        tool_call("read_file", path="calc.py"),
        tool_call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
        {"content": "Fixed add()."},
    ]
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        done = localhand(
            "run",
            "Fix the bug in calc.py",
            "--workspace",
            str(demo),
            "--model",
            "qwen3:8b",
            "--agentic",
            "--verify",
            "python3 check_calc.py",
            "--jsonl",
            host=server.url,
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    records = parse_stream(done.stdout)
    types = [r["type"] for r in records]
    assert types[0] == "task_started" and types[-2:] == ["task_finished", "result"]
    assert types.count("result") == 1
    assert types.count("model_request") == 3 and types.count("tool_call") == 2
    result = records[-1]["payload"]
    assert (result["status"], result["files_modified"]) == ("pass", ["calc.py"])
    assert records[-1]["iteration"] == result["iterations_used"] == 3
    calls = [r for r in records if r["type"] == "tool_call"]
    assert [c["iteration"] for c in calls] == [1, 2]
    assert calls[1]["payload"]["tool_name"] == "edit_file" and calls[1]["payload"]["ok"]
    # run_id is the store's: `localhand show RUN` finds it
    (run,) = open_store().runs()
    assert {r["run_id"] for r in records} == {run.id}
    assert "Traceback" not in done.stderr


def test_run_refused_approval_and_failed_exit_code_unchanged(demo: Path, tmp_path: Path) -> None:
    script = [tool_call("run_command", command="rm -rf build"), *[{"content": "Could not."}] * 5]
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        done = localhand(
            "run",
            "Clean the build folder",
            "--workspace",
            str(demo),
            "--model",
            "qwen3:8b",
            "--agentic",
            "--approve",
            "always",
            "--verify",
            "test -e nothing-made-this",
            "--jsonl",
            host=server.url,
            cwd=tmp_path,
        )
    records = parse_stream(done.stdout)
    assert done.returncode == 1, done.stderr  # a failed check: 1, as without --jsonl
    asked = [r for r in records if r["type"] == "approval_needed"]
    decided = [r for r in records if r["type"] == "approval_decided"]
    assert asked and decided and decided[0]["payload"]["approved"] is False
    assert decided[0]["payload"]["by"] == "nobody"  # no terminal to ask on: refused
    refused = next(r for r in records if r["type"] == "tool_call")["payload"]
    assert not refused["ok"] and refused["result_summary"].startswith("Refused")
    assert records[-1]["type"] == "result" and records[-1]["payload"]["status"] == "fail"


def test_jsonl_with_json_is_a_usage_error(tmp_path: Path) -> None:
    done = localhand("run", "x", "--json", "--jsonl", cwd=tmp_path, host="http://127.0.0.1:9")
    assert done.returncode == 2 and done.stdout == ""
    assert "--jsonl" in done.stderr and "Traceback" not in done.stderr


def test_plan_prints_its_step_events_then_the_plan_result(tmp_path: Path) -> None:
    demo = example_copy("plan", tmp_path / "demo")
    done = localhand(
        "plan",
        "plan.yaml",
        "--workspace",
        str(demo),
        "--jsonl",
        host="http://127.0.0.1:9",
        cwd=demo,
    )
    assert done.returncode == 1, done.stderr  # the example's 'pack' step fails, as without
    records = parse_stream(done.stdout)
    types = [r["type"] for r in records]
    assert "step_started" in types and "step_finished" in types
    failed = [r for r in records if r["type"] == "step_finished"][-1]["payload"]
    assert failed["status"] != "done", failed
    assert types[-1] == "result" and types.count("result") == 1
    assert records[-1]["payload"]["status"] == "fail"
    assert "steps" in records[-1]["payload"]


def test_batch_prints_each_task_s_events_and_results(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    lines = [
        {
            "id": f"t{i}",
            "description": f"Write t{i}.txt",
            "workspace": "ws",
            "agentic": True,
            "verify": [{"file_exists": f"t{i}.txt"}],
        }
        for i in range(2)
    ]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    def model(body: dict[str, Any]) -> Any:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        name = "t0" if "t0.txt" in user else "t1"
        if any(m.get("role") == "tool" for m in body["messages"]):
            return "Done."
        return tool_call("write_file", path=f"{name}.txt", content="done")

    with FakeOllama([model] * 10, models={"qwen3:8b": {}}) as server:
        done = localhand(
            "batch",
            "tasks.jsonl",
            "--model",
            "qwen3:8b",
            "--workdir",
            str(tmp_path / "work"),
            "--host",
            server.url,
            "--jsonl",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    records = parse_stream(done.stdout)
    results = [r for r in records if r["type"] == "result"]
    assert sorted(r["payload"]["task_id"] for r in results) == ["t0", "t1"]
    assert records[-1]["type"] == "result"
    assert {r["payload"]["status"] for r in results} == {"pass"}
    with open_store() as store:
        run_ids = {run.id for run in store.runs()}
    started = [r for r in records if r["type"] == "task_started"]
    assert len(started) == 2 and {r["run_id"] for r in started} <= run_ids


def test_plan_drafted_by_the_model_streams_its_draft_request(tmp_path: Path) -> None:
    demo = example_copy("plan", tmp_path / "demo")
    draft = {"goal": "List the notes", "steps": [{"description": "List", "command": "ls notes"}]}
    with FakeOllama([{"content": json.dumps(draft)}], models={"qwen3:8b": {}}) as server:
        done = localhand(
            "plan",
            "--goal",
            "List the notes",
            "--yes",
            "--workspace",
            str(demo),
            "--model",
            "qwen3:8b",
            "--jsonl",
            host=server.url,
            cwd=demo,
        )
    assert done.returncode == 0, done.stderr
    records = parse_stream(done.stdout)
    types = [r["type"] for r in records]
    assert types[-1] == "result" and records[-1]["payload"]["status"] == "pass"
    assert records[-1]["payload"]["steps"][0]["command"] == "ls notes"
    assert "plan_started" in types and "step_finished" in types
    assert len({r["run_id"] for r in records}) == 1
