"""``localhand batch --output-schema FILE`` and a batch line's own ``output_schema``: every task
the model carries out ends with its answer as JSON (asked for without tools, with the schema as
Ollama's ``format``), in its Result, the ``--json`` lines and the summary; a plan task runs
without it, and says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import localhand
from localhand.batch.tasks import load_batch, with_output_schema
from localhand.errors import ConfigError
from localhand.testing import FakeOllama

pytestmark = pytest.mark.timeout(120)

BATCH_SCHEMA = {
    "type": "object",
    "properties": {"files": {"type": "integer"}},
    "required": ["files"],
    "additionalProperties": False,
}
OWN_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


def model(body: dict[str, Any]) -> Any:
    """Lists the workspace once, answers, then gives the answer in the shape its request's
    ``format`` asks for."""
    schema = body.get("format")
    if schema == BATCH_SCHEMA:
        return json.dumps({"files": 1})
    if schema == OWN_SCHEMA:
        return json.dumps({"name": "readme.md"})
    if any(m["role"] == "tool" for m in body["messages"]):
        return "One file: readme.md."
    call = {"name": "list_directory", "arguments": {"path": "."}}
    return {"content": "", "tool_calls": [{"function": call}]}


def write_batch(folder: Path) -> tuple[Path, Path]:
    (folder / "ws").mkdir()
    (folder / "ws" / "readme.md").write_text("hello\n")
    (folder / "own.schema.json").write_text(json.dumps(OWN_SCHEMA))
    lines = [
        {"id": "count", "description": "Count the files", "workspace": "ws", "agentic": True},
        {
            "id": "name",
            "description": "Name the file",
            "workspace": "ws",
            "agentic": True,
            "output_schema": "own.schema.json",
        },
        {
            "id": "steps",
            "plan": {
                "goal": "Say hi",
                "steps": [{"id": "hi", "description": "say hi", "command": "echo hi"}],
            },
            "mode": "planner",
            "workspace": "ws",
        },
    ]
    tasks = folder / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    schema = folder / "batch.schema.json"
    schema.write_text(json.dumps(BATCH_SCHEMA))
    return tasks, schema


def test_every_task_the_model_carries_out_answers_as_json(tmp_path: Path) -> None:
    tasks, schema = write_batch(tmp_path)
    with FakeOllama([model] * 20, models={"qwen3:8b": {}}, strict_format=True) as server:
        done = localhand(
            "batch",
            str(tasks),
            "--host",
            server.url,
            "--model",
            "qwen3:8b",
            "--sandbox",
            "off",
            "--output-schema",
            str(schema),
            "--json",
            "--workdir",
            str(tmp_path / "work"),
            cwd=tmp_path,
        )
        asked = [r.body for r in server.chat_requests if r.body.get("format")]
    results = {r["task_id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert results["count"]["answer_json"] == {"files": 1}, done.stderr
    assert results["name"]["answer_json"] == {"name": "readme.md"}, "its own schema wins"
    assert "answer_json" not in results["steps"]
    assert results["steps"]["status"] == "pass", json.dumps(results["steps"])
    assert all(not body.get("tools") for body in asked), "the answer is asked for without tools"
    assert len(asked) == 2
    assert (
        "--output-schema is not for plan tasks" in done.stderr
        and "steps run without" in done.stderr
    )
    assert 'count: answer_json {"files":1}' in done.stderr, "the summary shows the answer"


def test_a_plan_line_with_its_own_schema_is_refused_before_the_batch_starts(
    tmp_path: Path,
) -> None:
    (tmp_path / "ws").mkdir()
    line = {"plan": {"goal": "x", "steps": [{"command": "true"}]}, "output_schema": {}}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({**line, "workspace": "ws"}) + "\n")
    with pytest.raises(ConfigError, match=r"tasks.jsonl:1: output_schema: a plan task's answer"):
        load_batch(tasks)


def test_a_schema_file_far_from_the_batch_file_or_a_bad_schema_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b"
    (folder / "ws").mkdir(parents=True)
    (tmp_path / "far.json").write_text(json.dumps(OWN_SCHEMA))
    tasks = folder / "tasks.jsonl"
    line = {"description": "x", "workspace": "ws", "output_schema": "../../far.json"}
    tasks.write_text(json.dumps(line) + "\n")
    with pytest.raises(ConfigError, match="outside the task file's folder"):
        load_batch(tasks)
    bad = folder / "bad.jsonl"  # a second file: a changed one would first need trusting
    bad.write_text(json.dumps({**line, "output_schema": {"type": "nonsense"}}) + "\n")
    with pytest.raises(ConfigError, match=r"bad\.jsonl:1: output_schema is not a valid JSON"):
        load_batch(bad)


def test_a_task_given_the_batch_schema_is_a_changed_task_for_resume(tmp_path: Path) -> None:
    tasks, _ = write_batch(tmp_path)
    items = load_batch(tasks)
    given, plans = with_output_schema(items, BATCH_SCHEMA)
    assert [item.id for item in plans] == ["steps"]
    assert given[0].task.output_schema == BATCH_SCHEMA and given[0].key != items[0].key
    assert given[1].task.output_schema == OWN_SCHEMA and given[1].key == items[1].key
    assert given[2].task.output_schema is None
    assert with_output_schema(items, None) == (items, [])
