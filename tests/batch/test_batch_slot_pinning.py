"""Batch tasks on one llama-server keep a slot each: every task gets its own backend, which
pins one slot (``id_slot``) for all its requests, and parallel tasks pin different ones, so
that they do not evict each other's cached prompt. The slots are given back when the tasks end."""

from __future__ import annotations

import io
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console

from localhand.batch import run_batch
from localhand.config.settings import Settings
from localhand.models import _slots
from localhand.testing import FakeOllama
from test_batch import QWEN, options, task_file, write_batch, writer


def runs(server: FakeOllama) -> list[Any]:
    """The requests of the tasks' runs, not the warm-ups of their slots."""
    return [r for r in server.openai_requests if r.body.get("max_tokens") != 1]


def test_the_first_wave_warms_each_tasks_own_slot_with_what_its_run_opens_with(
    tmp_path: Path,
) -> None:
    tasks = write_batch(tmp_path, ["a", "b", "c"])
    with FakeOllama(writer(), models=QWEN, slots=2, latency=0.1, props=True) as server:
        report = run_batch(
            tasks,
            Settings(backend="openai"),
            options(tmp_path, hosts=[server.url + "/v1"], concurrency=2),
            console=Console(file=io.StringIO(), width=500),
            live=False,
        )
        assert report.exit_code == 0, [r.result for r in report.rows]
        requests = [r.body for r in server.openai_requests]
    warms = [body for body in requests if body["max_tokens"] == 1]
    assert sorted(body["id_slot"] for body in warms) == [0, 1], "two tasks at once: two slots"
    for warm in warms:  # before its slot's first run request, and the same prefix
        first = next(b for b in requests if b["id_slot"] == warm["id_slot"] and b is not warm)
        assert requests.index(warm) < requests.index(first)
        assert warm["tools"] == first["tools"]
        assert warm["messages"][0] == first["messages"][0], "the same system turn"
        assert warm["messages"][1:] == [{"role": "user", "content": ""}], "nothing of the task"
    assert len(warms) == 2, "the third task takes a slot a task left warm: not warmed again"


def test_two_parallel_batch_tasks_name_different_slots(tmp_path: Path) -> None:
    tasks = write_batch(tmp_path, ["a", "b"])
    with FakeOllama(writer(), models=QWEN, slots=2, latency=0.2, props=True) as server:
        url = server.url + "/v1"
        report = run_batch(
            tasks,
            Settings(backend="openai"),
            options(tmp_path, hosts=[url], concurrency=2),
            console=Console(file=io.StringIO(), width=500),
            live=False,
        )
        assert report.exit_code == 0, [r.result for r in report.rows]
        slots: dict[str, set[object]] = defaultdict(set)
        for request in runs(server):
            slots[task_file(request.body)].add(request.body.get("id_slot"))
        assert server.peak_requests == 2, "the two tasks ran side by side"
        assert _slots._held.get(_slots.root_of(url)) == [0, 0], "each task gave its slot back"
    assert set(slots) == {"a.txt", "b.txt"}
    assert all(len(named) == 1 for named in slots.values()), slots  # one slot a task
    assert slots["a.txt"] | slots["b.txt"] == {0, 1}, slots  # and not the same one
