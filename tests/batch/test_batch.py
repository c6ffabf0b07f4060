"""Batch runs against fake Ollama servers on real sockets: slots, routing, failover, 503s."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from localhand.batch import BatchOptions, EndpointPool, PooledModel, run_batch
from localhand.batch.endpoints import Endpoint
from localhand.config.settings import Settings
from localhand.errors import ConfigError, ServerUnavailable
from localhand.models.ollama import OllamaModel
from localhand.store import open_store
from localhand.testing import FakeOllama, Fault

QWEN = {"qwen3:8b": {}}


def writer(steps: int = 2):
    """A model that, for a task saying "Write NAME.txt", writes NAME-1.txt ... then NAME.txt
    (one tool call per turn) and then answers; it only looks at the conversation, so many
    tasks can share one script in any order."""

    def reply(body: dict[str, Any]) -> Any:
        if body.get("options", {}).get("num_predict") == 1:  # a first-wave slot warmed: no task
            return "ok"
        messages = body["messages"]
        name = task_file(body)
        done = sum(1 for m in messages if m.get("role") == "tool")
        if done >= steps:
            return f"Wrote {name}."
        path = name if done == steps - 1 else f"{name}-{done + 1}"
        call = {"name": "write_file", "arguments": {"path": path, "content": "x"}}
        return {"content": "", "tool_calls": [{"function": call}]}

    return [reply] * 500


def task_file(body: dict[str, Any]) -> str:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return re.search(r"Write (\S+\.txt)", user).group(1)


def write_batch(folder: Path, names: list[str], **fields: Any) -> Path:
    (folder / "ws").mkdir(exist_ok=True)
    (folder / "ws" / "readme.md").write_text("the source workspace\n")
    lines = [
        {
            "id": name,
            "description": f"Write {name}.txt",
            "workspace": "ws",
            "agentic": True,
            "verify": [{"file_exists": f"{name}.txt"}],
            **fields,
        }
        for name in names
    ]
    path = folder / "tasks.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def options(tmp_path: Path, **changes: Any) -> BatchOptions:
    return BatchOptions(workdir=tmp_path / "work", db=tmp_path / "runs.db", **changes)


def hosts_of(server: FakeOllama) -> set[str]:
    return {task_file(r.body) for r in server.chat_requests}


def test_tasks_share_the_pool_within_each_endpoints_slots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"t{i}" for i in range(6)]
    tasks = write_batch(tmp_path, names)
    with (
        FakeOllama(writer(), models=QWEN, slots=2, latency=0.25) as big,
        FakeOllama(writer(), models=QWEN, slots=1, latency=0.25) as small,
    ):
        config = tmp_path / "localhand.toml"
        config.write_text(
            f'[[pool.endpoints]]\nurl = "{big.url}"\nslots = 2\n\n'
            f'[[pool.endpoints]]\nurl = "{small.url}"\nmodels = ["qwen3:8b"]\n'
        )
        monkeypatch.setenv("LOCALHAND_CONFIG", str(config))
        results: list[dict] = []
        report = run_batch(
            tasks, Settings(), options(tmp_path), on_result=results.append, live=False
        )
    assert report.exit_code == 0, [r.result for r in report.rows]
    assert sorted(r["task_id"] for r in results) == names
    assert {r["status"] for r in results} == {"pass"}
    assert big.peak_requests == 2 and small.peak_requests == 1, "every slot busy, no more"
    assert hosts_of(big) and hosts_of(small), "both endpoints got work"
    assert not hosts_of(big) & hosts_of(small), "a task stays on one endpoint"
    assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == ["readme.md"]
    assert not (tmp_path / "work").exists(), "workspaces are removed"
    state = [json.loads(line) for line in report.state_path.read_text().splitlines()]
    assert sorted(record["id"] for record in state) == names


def test_least_busy_endpoint_with_the_model_and_slot_caps(tmp_path: Path) -> None:
    llama = {"llama3.1:8b": {}}
    with (
        FakeOllama(writer(), models=QWEN, slots=3, latency=0.3) as a,
        FakeOllama(writer(), models={**QWEN, **llama}, slots=1, latency=0.3) as b,
    ):
        pool = EndpointPool([Endpoint(a.url, slots=3), Endpoint(b.url, slots=1)])
        pool.discover()
        first = pool.acquire("llama3.1:8b")
        assert first.url == b.url  # the only one that has it
        pool.release(first)
        picks = [pool.acquire("qwen3:8b").url for _ in range(4)]
        assert picks.count(a.url) == 3 and picks.count(b.url) == 1
        with pytest.raises(ServerUnavailable, match="no endpoint in the pool serves mistral"):
            pool.acquire("mistral")
        with pytest.raises(ConfigError, match="no endpoint in the pool serves gemma"):
            pool.check_serves(["qwen3:8b", "gemma"])

        names = [f"s{i}" for i in range(8)]
        tasks = write_batch(tmp_path, names)
        report = run_batch(
            tasks,
            Settings(),
            options(tmp_path, hosts=[a.url], slots=3, concurrency=6),
            live=False,
        )
        assert report.exit_code == 0
        assert a.peak_requests == 3, "three slots, all kept busy, never more"


def test_an_endpoint_that_dies_mid_batch_hands_its_tasks_over(tmp_path: Path) -> None:
    names = [f"f{i}" for i in range(4)]
    tasks = write_batch(tmp_path, names)
    with (
        FakeOllama(writer(3), models=QWEN, slots=1, latency=0.3) as doomed,
        FakeOllama(writer(3), models=QWEN, slots=1, latency=0.3) as survivor,
    ):

        def kill_after_two_requests() -> None:
            while len(doomed.chat_requests) < 2:
                time.sleep(0.02)
            doomed.close()  # mid-task: its third request is cut or refused

        killer = threading.Thread(target=kill_after_two_requests, daemon=True)
        killer.start()
        report = run_batch(
            tasks, Settings(), options(tmp_path, hosts=[doomed.url, survivor.url]), live=False
        )
        killer.join(timeout=10)
    assert report.exit_code == 0, [r.result for r in report.rows]
    moved = [r for r in report.rows if "→" in r.where]
    assert len(moved) == 1 and moved[0].where.startswith(doomed.url)
    name = moved[0].task_id + ".txt"
    on_survivor = [r for r in survivor.chat_requests if task_file(r.body) == name]
    assert sum(m["role"] == "tool" for m in on_survivor[0].body["messages"]) >= 1, (
        "the conversation goes on where it was"
    )
    with open_store(tmp_path / "runs.db") as store:
        run = store.runs(task_id=moved[0].task_id)[0]
        warnings = [e.data["message"] for e in store.events(run.id, types=("warning",))]
    assert any("stopped answering" in w for w in warnings)


def pooled_once(pool: EndpointPool, waits: list[float], **more: Any) -> PooledModel:
    """qwen3:8b on ``pool``, each request tried once, its pauses noted in ``waits``."""
    factory = lambda e: OllamaModel("qwen3:8b", e.url, max_attempts=1)  # noqa: E731
    return PooledModel(pool, "qwen3:8b", factory, sleep=waits.append, **more)


def test_a_busy_server_503_is_waited_out_not_failed(tmp_path: Path) -> None:
    script = [Fault.status(503)] * 3 + ["All done."]
    waits: list[float] = []
    warnings: list[str] = []
    with FakeOllama(script, models=QWEN) as server:
        pool = EndpointPool([Endpoint(server.url)])
        model = pooled_once(pool, waits, on_warning=warnings.append)
        with model:
            reply = model.chat([{"role": "user", "content": "hi"}])
        assert reply.content == "All done."
        assert waits == [1.0, 2.0, 4.0]
        assert all("busy" in w for w in warnings)
        assert pool.status()[0].alive and pool.status()[0].busy == 0


def test_a_pooled_simple_answer_waits_out_a_busy_server_as_chat_does() -> None:
    """The simple path's ``stream`` is ``chat``'s reply handed out, busy waits and failover
    and all: the bound endpoint's own stream would fail at the first 503."""
    waits: list[float] = []
    with FakeOllama([Fault.status(503), "All done."], models=QWEN) as server:
        model = pooled_once(EndpointPool([Endpoint(server.url)]), waits)
        with model:
            *deltas, last = model.stream([{"role": "user", "content": "hi"}])
        streamed = {request.body.get("stream") for request in server.chat_requests}
    assert "".join(d.content for d in deltas) == "All done."
    assert last.done and last.reply is None and last.model == "qwen3:8b"
    assert waits == [1.0] and streamed == {False}


def test_every_endpoint_down_at_start_is_a_clear_error(tmp_path: Path) -> None:
    tasks = write_batch(tmp_path, ["x"])
    server = FakeOllama(models=QWEN)
    url = server.url
    server.close()
    with pytest.raises(ConfigError, match="no endpoint of the pool answers"):
        run_batch(tasks, Settings(), options(tmp_path, hosts=[url]), live=False)
    with (
        FakeOllama(models={"llama3.1:8b": {}}) as other,
        pytest.raises(ConfigError, match=r"no endpoint in the pool serves qwen3:8b"),
    ):
        run_batch(tasks, Settings(), options(tmp_path, hosts=[other.url]), live=False)


def test_a_batch_that_watches_replies_reads_them_as_streams(tmp_path: Path) -> None:
    tasks = write_batch(tmp_path, ["w0"])
    with FakeOllama(writer(), models=QWEN) as server:
        settings = Settings(model="qwen3:8b", host=server.url, watch_replies=True)
        report = run_batch(tasks, settings, options(tmp_path), live=False)
        streamed = {request.body.get("stream") for request in server.chat_requests}
    assert report.exit_code == 0, [r.result for r in report.rows]
    assert streamed == {True}, "every reply watched, as --watch-replies asks"


def test_a_pooled_task_keeps_its_cache_on_its_endpoints_llama_server(tmp_path: Path) -> None:
    """The slot actions reach the bound endpoint's backend, as its other members do: without
    them a batch on a pool of llama-servers would never keep a task's cache for its retry."""
    from localhand.models.openai_compat import OpenAICompatModel

    with FakeOllama(["Hi."], models=QWEN, props=True, slot_save=True) as server:
        pool = EndpointPool([Endpoint(server.url + "/v1")])
        model = PooledModel(pool, "qwen3:8b", lambda e: OpenAICompatModel("qwen3:8b", e.url))
        with model:
            model.chat([{"role": "user", "content": "hi"}])
            saved = model.slot_file("save", "localhand-slot-0.bin")
    assert saved is not None and saved.error is None
