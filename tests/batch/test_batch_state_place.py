"""Where a batch keeps what it finished: localhand's data directory, keyed by the batch file's
real path, never beside the batch file where a task's model could forge a ``pass``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from localhand.batch.state import state_path
from localhand.batch.tasks import load_batch
from localhand.testing import FakeOllama

QWEN = {"qwen3:8b": {}}


def writer(body: dict[str, Any]) -> Any:
    """A model that writes done.txt, then says so."""
    if any(m.get("role") == "tool" for m in body["messages"]):
        return "Wrote done.txt."
    call = {"name": "write_file", "arguments": {"path": "done.txt", "content": "x"}}
    return {"content": "", "tool_calls": [{"function": call}]}


def write_batch(folder: Path) -> Path:
    (folder / "ws").mkdir()
    (folder / "ws" / "readme.md").write_text("the source workspace\n")
    line = {
        "id": "only",
        "description": "Write done.txt",
        "workspace": "ws",
        "agentic": True,
        "verify": [{"file_exists": "done.txt"}],
    }
    path = folder / "tasks.jsonl"
    path.write_text(json.dumps(line) + "\n")
    return path


def batch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "localhand", "batch", *args],
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=120,
    )


def forged(tasks: Path) -> str:
    """The state record a model could write: the task "passed", its line unchanged, so a batch
    that read it would skip the task."""
    (task,) = load_batch(tasks)
    record = {"id": task.id, "key": task.key, "line": 1, "result": {"status": "pass"}}
    return json.dumps(record) + "\n"


def test_a_state_forged_beside_the_batch_file_is_ignored_with_a_warning(tmp_path: Path) -> None:
    tasks = write_batch(tmp_path)
    (tmp_path / "tasks.jsonl.state").write_text(forged(tasks))
    with FakeOllama([writer] * 10, models=QWEN) as server:
        done = batch(
            "tasks.jsonl", "--model", "qwen3:8b", "--host", server.url, "--json", cwd=tmp_path
        )
        asked = len(server.chat_requests)
    assert done.returncode == 0, done.stderr
    assert asked > 0, "the task ran: the forged record was not read"
    assert "finished before" not in done.stderr
    stderr = " ".join(done.stderr.split())
    kept = state_path(tasks)
    assert "tasks.jsonl.state is ignored" in stderr and str(kept) in stderr
    assert [json.loads(line)["id"] for line in kept.read_text().splitlines()] == ["only"]
    assert kept.parent.parent == Path(os.environ["LOCALHAND_HOME"])


def test_the_state_follows_the_real_path_of_the_batch_file(tmp_path: Path) -> None:
    tasks = write_batch(tmp_path)
    link = tmp_path / "linked.jsonl"
    link.symlink_to(tasks)
    other = tmp_path / "elsewhere"
    other.mkdir()
    same_name = write_batch(other)
    assert state_path(link) == state_path(tasks)
    assert state_path(same_name) != state_path(tasks)

    with FakeOllama([writer] * 10, models=QWEN) as server:
        first = batch("tasks.jsonl", "--model", "qwen3:8b", "--host", server.url, cwd=tmp_path)
        asked = len(server.chat_requests)
        again = batch("linked.jsonl", "--model", "qwen3:8b", "--host", server.url, cwd=tmp_path)
        assert len(server.chat_requests) == asked, "resumed through the link: nothing rerun"
    assert first.returncode == 0 and again.returncode == 0, again.stderr
    assert "finished before" in again.stdout
    assert not (tmp_path / "tasks.jsonl.state").exists(), "nothing is written beside the file"


def test_a_state_the_user_names_is_still_used(tmp_path: Path) -> None:
    write_batch(tmp_path)
    chosen = tmp_path / "mine" / "resume.jsonl"
    chosen.parent.mkdir()
    with FakeOllama([writer] * 10, models=QWEN) as server:
        done = batch(
            "tasks.jsonl",
            "--state",
            str(chosen),
            "--model",
            "qwen3:8b",
            "--host",
            server.url,
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["id"] for line in chosen.read_text().splitlines()] == ["only"]
