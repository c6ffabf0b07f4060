"""A real local Ray cluster (simulated nodes, loopback only) routes tasks to their models.

Two worker nodes, each "next to" its own fake Ollama server: one offers the resource
``localhand/qwen3:8b`` (2 slots), the other ``localhand/llama3.1:8b`` (1 slot). Each node's
server URL is in its environment (``LOCALHAND_HOST``), as it would be on a real GPU box.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import optional_deps

# Ray picks this machine's network address for its nodes unless told that clusters are off;
# then everything, driver to raylets, stays on 127.0.0.1. Read when Ray is first imported.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
ray = optional_deps.ray()  # skipped without Ray, required in CI
from ray._private import ray_constants  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from localhand.batch import BatchOptions, run_batch  # noqa: E402
from localhand.config.settings import Settings  # noqa: E402
from localhand.store import open_store  # noqa: E402
from localhand.testing import FakeOllama  # noqa: E402

pytestmark = pytest.mark.slow


HOLD: dict[str, threading.Event] = {}
"""Task files whose first request waits until the event is set (the servers run here)."""
REACHED = threading.Event()


def writer(body: dict[str, Any]) -> Any:
    name = name_of(body)
    if name in HOLD and not REACHED.is_set():
        REACHED.set()
        HOLD[name].wait(30)
    if any(m.get("role") == "tool" for m in body["messages"]):
        return f"Wrote {name}."
    call = {"name": "write_file", "arguments": {"path": name, "content": "x"}}
    return {"content": "", "tool_calls": [{"function": call}]}


def name_of(body: dict[str, Any]) -> str:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return re.search(r"Write (\S+)", user).group(1)


@dataclass
class Nodes:
    cluster: Cluster
    servers: dict[str, FakeOllama]
    """Each worker node's model server, by the node's name."""
    nodes: dict[str, Any] = field(default_factory=dict)


def add_node(nodes: Nodes, name: str, model: str, slots: int) -> FakeOllama:
    server = FakeOllama([writer] * 50, models={model: {}}, latency=0.2)
    nodes.servers[name] = server
    nodes.nodes[name] = nodes.cluster.add_node(
        num_cpus=1, resources={f"localhand/{model}": slots}, env_vars={"LOCALHAND_HOST": server.url}
    )
    return server


@pytest.fixture(scope="module")
def nodes() -> Iterator[Nodes]:
    ray_constants.ENABLE_RAY_CLUSTER = False  # in case Ray was imported before this module
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "include_dashboard": False},
    )
    nodes = Nodes(cluster, {})
    try:
        add_node(nodes, "qwen", "qwen3:8b", 2)
        add_node(nodes, "llama", "llama3.1:8b", 1)
        yield nodes
    finally:
        cluster.shutdown()
        for server in nodes.servers.values():
            server.close()


def test_tasks_run_on_the_node_that_serves_their_model(tmp_path: Path, nodes: Nodes) -> None:
    cluster, qwen, llama = nodes.cluster, nodes.servers["qwen"], nodes.servers["llama"]
    (tmp_path / "ws").mkdir()
    lines = [
        *({"id": f"q{i}", "model": "qwen3:8b"} for i in range(3)),
        *({"id": f"l{i}", "model": "llama3.1:8b"} for i in range(2)),
        {"id": "m0", "model": "mistral"},
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "".join(
            json.dumps(
                {
                    **line,
                    "description": f"Write {line['id']}.txt",
                    "workspace": "ws",
                    "agentic": True,
                    "verify": [{"file_exists": f"{line['id']}.txt"}],
                }
            )
            + "\n"
            for line in lines
        )
    )
    db = tmp_path / "runs.db"
    report = run_batch(
        tasks,
        Settings(),
        BatchOptions(executor="ray", ray_address=cluster.address, db=db, workdir=tmp_path / "work"),
        live=False,
    )
    rows = {row.task_id: row for row in report.rows}
    assert {k: r.result["status"] for k, r in rows.items()} == {
        "q0": "pass",
        "q1": "pass",
        "q2": "pass",
        "l0": "pass",
        "l1": "pass",
        "m0": "error",
    }
    assert "no Ray node offers the resource localhand/mistral:latest" in rows["m0"].result["error"]

    def asked(server: FakeOllama) -> set[str]:
        return {name_of(r.body) for r in server.chat_requests}

    assert asked(qwen) == {"q0.txt", "q1.txt", "q2.txt"}
    assert asked(llama) == {"l0.txt", "l1.txt"}
    assert llama.peak_requests == 1, "one slot on that node: one task at a time"
    assert len({rows[t].where for t in ("q0", "q1", "q2")}) == 1
    assert rows["q0"].where.startswith("ray node ") and rows["q0"].where != rows["l0"].where
    with open_store(db) as store:
        for task_id in ("q0", "l1"):
            (run,) = store.runs(task_id=task_id)
            assert run.status == "pass" and run.tokens_in > 0
            types = [e.type for e in store.events(run.id)]
            assert types[0] == "model_status" and "task_started" in types
            assert types[-1] == "task_finished"
        (failed,) = store.runs(task_id="m0")
        assert failed.status == "error"
        [why] = store.events(failed.id)  # it never started: its Result says why, as show prints
        assert why.type == "task_finished" and "no Ray node offers" in why.data["result"]["error"]
        assert store.ledger_spent().calls == 10, "the driver books the workers' model calls"
    assert not (tmp_path / "work").exists()


def test_a_task_whose_node_dies_is_rerun_by_ray_on_another(tmp_path: Path, nodes: Nodes) -> None:
    # Two nodes of their own, for a model of their own: the nodes the other test counts on
    # stay as they are, whichever order the tests run in.
    add_node(nodes, "qwen2.5", "qwen2.5:7b", 1)
    add_node(nodes, "qwen2.5-b", "qwen2.5:7b", 1)
    HOLD["n0.txt"] = threading.Event()
    (tmp_path / "ws").mkdir()
    tasks = tmp_path / "tasks.jsonl"
    task = {
        "id": "n0",
        "description": "Write n0.txt",
        "model": "qwen2.5:7b",
        "workspace": "ws",
        "agentic": True,
        "verify": [{"file_exists": "n0.txt"}],
    }
    tasks.write_text(json.dumps(task) + "\n")
    db = tmp_path / "runs.db"
    reports: list[Any] = []
    options = BatchOptions(executor="ray", ray_address=nodes.cluster.address, db=db)

    def batch() -> None:
        try:
            reports.append(run_batch(tasks, Settings(), options, live=False))
        except BaseException as exc:
            reports.append(exc)

    runner = threading.Thread(target=batch)
    runner.start()
    try:
        assert REACHED.wait(60), "the task reached its model"
        (victim,) = [
            name
            for name in ("qwen2.5", "qwen2.5-b")
            if any(name_of(r.body) == "n0.txt" for r in nodes.servers[name].chat_requests)
        ]
        nodes.cluster.remove_node(nodes.nodes.pop(victim), allow_graceful=False)
    finally:
        HOLD["n0.txt"].set()
        runner.join(90)
    (report,) = reports
    assert not isinstance(report, BaseException), report
    (row,) = report.rows
    assert row.result["status"] == "pass", row.result
    survivor = "qwen2.5-b" if victim == "qwen2.5" else "qwen2.5"
    assert any(name_of(r.body) == "n0.txt" for r in nodes.servers[survivor].chat_requests)
    with open_store(db) as store:
        statuses = sorted(run.status for run in store.runs(task_id="n0"))
    assert statuses == ["error", "pass"], "the lost attempt is closed, the rerun recorded"
