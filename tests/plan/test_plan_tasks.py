"""Plan mode started from a task: a batch line and the dashboard's form, against the fake
Ollama on real sockets, and task files that name a plan or a mode."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import localhand
from dashboard_helpers import client
from localhand.batch import BatchOptions, run_batch
from localhand.config.settings import Settings
from localhand.dashboard import start_dashboard
from localhand.errors import ConfigError
from localhand.session.api import run_task
from localhand.store import Store
from localhand.taskfile import task_from_dict
from localhand.testing import FakeOllama

QWEN = {"qwen3:8b": {}}
DRAFT = json.dumps(
    {"goal": "greet", "steps": [{"description": "write hello", "command": "echo hi > hello.txt"}]}
)


def test_a_batch_line_naming_a_plan_file_runs_it_in_the_mode_it_asks(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "plan.yaml").write_text(
        "goal: make out/ready\n"
        "steps:\n  - {id: ready, description: mark, command: touch out/ready}\n"
    )
    repair = {
        "action": "insert_steps",
        "reason": "out/ is missing",
        "new_steps": [{"description": "make out/", "command": "mkdir -p out"}],
    }
    script = [json.dumps(repair), "summary"] * 3
    lines = [
        {"id": "fixed", "plan": "plan.yaml", "mode": "agentic", "workspace": "ws"},
        {"id": "stopped", "plan": "plan.yaml", "mode": "planner", "workspace": "ws"},
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    results: list[dict[str, Any]] = []
    with FakeOllama(script, models=QWEN) as server:
        settings = Settings(model="qwen3:8b", host=server.url, sandbox="off")
        options = BatchOptions(workdir=tmp_path / "work", db=tmp_path / "runs.db", concurrency=1)
        run_batch(tasks, settings, options, on_result=results.append, live=False)
    by_id = {result["task_id"]: result for result in results}
    assert (by_id["fixed"]["mode"], by_id["fixed"]["status"]) == ("agentic", "pass")
    assert by_id["fixed"]["steps_added"] == 1
    assert (by_id["stopped"]["mode"], by_id["stopped"]["status"]) == ("planner", "fail")
    assert by_id["stopped"]["termination_reason"] == "step_failed"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"plan": "p.yaml", "verify": ["true"]}, "make the checks steps of the plan"),
        ({"mode": "agentic"}, "description: required field is missing"),
        ({"plan": "p.yaml", "mode": "yolo"}, "mode"),
        ({}, "description: required field is missing"),
    ],
)
def test_task_lines_that_mix_plan_and_loop_fields_are_refused_by_name(
    tmp_path: Path, line: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        task_from_dict(line, tmp_path)


def test_a_plan_task_s_description_is_its_goal_and_its_plan_path_is_absolute(
    tmp_path: Path,
) -> None:
    inline = task_from_dict({"plan": {"goal": "ship it", "steps": []}}, tmp_path)
    assert (inline.description, inline.is_plan) == ("ship it", True)
    named = task_from_dict({"plan": "plans/p.yaml", "mode": "teacher"}, tmp_path)
    assert named.plan == str(tmp_path / "plans" / "p.yaml") and named.mode == "teacher"
    assert not task_from_dict({"description": "x"}, tmp_path).is_plan


# -- the dashboard -----------------------------------------------------------------------------


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[tuple[Any, Store, FakeOllama]]:
    store = Store(tmp_path / "runs.db")
    with FakeOllama([DRAFT, "summary"], models=QWEN) as ollama:
        settings = Settings(model="qwen3:8b", host=ollama.url, sandbox="off")
        with start_dashboard(store, port=0, settings=settings, workspaces=[tmp_path]) as server:
            yield server, store, ollama


def test_the_dashboard_starts_a_plan_the_model_drafts(
    dashboard: tuple[Any, Store, FakeOllama], tmp_path: Path
) -> None:
    server, store, _ = dashboard
    (tmp_path / "ws").mkdir()
    with client(server) as api:
        started = api.post(
            "api/runs",
            json={"description": "greet", "workspace": str(tmp_path / "ws"), "mode": "planner"},
        )
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        deadline = time.monotonic() + 20
        while store.run(run_id).status == "running":
            assert time.monotonic() < deadline, "the plan did not end"
            time.sleep(0.05)
    events = [event.to_dict() for event in store.events(run_id)]
    types = [event["type"] for event in events]
    assert "plan_started" in types and types[-1] == "task_finished"
    result = events[-1]["result"]
    assert (result["mode"], result["status"]) == ("planner", "pass")
    assert (tmp_path / "ws" / "hello.txt").read_text() == "hi\n"


def test_the_dashboard_refuses_checks_with_a_plan(
    dashboard: tuple[Any, Store, FakeOllama], tmp_path: Path
) -> None:
    server, _, _ = dashboard
    with client(server) as api:
        refused = api.post(
            "api/runs",
            json={
                "description": "greet",
                "workspace": str(tmp_path),
                "mode": "agentic",
                "verify": ["true"],
            },
        )
    assert refused.status_code == 400
    assert "plan runs its own steps" in refused.text


def test_localhand_run_with_a_plan_task_file_runs_the_plan(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "task.yaml").write_text(
        "workspace: ws\nplan:\n  goal: greet\n  steps:\n"
        "    - {description: say hi, command: echo hi > hi.txt}\n"
    )
    done = localhand("run", "--task-file", str(tmp_path / "task.yaml"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["goal"], result["status"], result["mode"]) == ("greet", "pass", "planner")
    assert (tmp_path / "ws" / "hi.txt").read_text() == "hi\n"


def test_run_task_refuses_a_plan_task_and_says_where_it_goes(tmp_path: Path) -> None:
    task = task_from_dict({"plan": {"goal": "g", "steps": []}}, tmp_path)
    with pytest.raises(ConfigError, match="names a plan: run it with run_plan"):
        run_task(task, Settings())
