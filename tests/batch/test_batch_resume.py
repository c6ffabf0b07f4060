"""The real command in a subprocess: SIGKILLed mid-batch, then run again, it resumes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from localhand.batch.state import state_path
from localhand.store import open_store
from localhand.testing import FakeOllama

# The batch command alone, as cli.py will mount it (`localhand batch ...`).


def batch_command(*args: str, cwd: Path, **popen: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "localhand", "batch", *args],
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # its own process group, killed as a whole
        **popen,
    )


def name_of(body: dict[str, Any]) -> str:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return re.search(r"Write (\w+)\.txt", user).group(1)


def tools_done(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m.get("role") == "tool"]


def test_a_killed_batch_resumes_skipping_finished_tasks(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "readme.md").write_text("source\n")
    lines = [
        {
            "id": f"r{i}",
            "description": f"Write r{i}.txt",
            "workspace": "ws",
            "agentic": True,
            "verify": [{"file_exists": f"r{i}.txt"}],
        }
        for i in range(3)
    ]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    at_the_kill, killed = threading.Event(), threading.Event()
    armed = [True]

    def model(body: dict[str, Any]) -> Any:
        name, done = name_of(body), len(tools_done(body))
        if name == "r1" and done == 2 and armed[0]:  # r1 has written r1.part: kill it now
            armed[0] = False
            at_the_kill.set()
            killed.wait(10)
        steps = [
            {"name": "run_command", "arguments": {"command": "ls"}},
            {"name": "write_file", "arguments": {"path": f"{name}.part", "content": "half"}},
            {"name": "write_file", "arguments": {"path": f"{name}.txt", "content": "done"}},
        ]
        if done < len(steps):
            return {"content": "", "tool_calls": [{"function": steps[done]}]}
        return "Done."

    args = ("tasks.jsonl", "--model", "qwen3:8b", "--workdir", str(tmp_path / "work"), "--json")
    with FakeOllama([model] * 100, models={"qwen3:8b": {}}, slots=1, latency=0.1) as server:
        first = batch_command(*args, "--host", server.url, cwd=tmp_path)
        assert at_the_kill.wait(60), first.communicate(timeout=5)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        killed.set()
        state = state_path(tmp_path / "tasks.jsonl").read_text().splitlines()
        assert [json.loads(line)["id"] for line in state] == ["r0"]
        assert (tmp_path / "work" / "r1" / "r1.part").exists(), "the killed task's leftovers"
        before = len(server.chat_requests)

        second = batch_command(*args, "--host", server.url, cwd=tmp_path)
        out, err = second.communicate(timeout=60)
        rerun = server.chat_requests[before:]

    assert second.returncode == 0, err
    results = [json.loads(line) for line in out.splitlines()]
    assert (results[0]["task_id"], results[0]["status"]) == ("r0", "pass")
    assert sorted(r["task_id"] for r in results) == ["r0", "r1", "r2"]
    assert {r["status"] for r in results} == {"pass"}
    assert "finished before" in err and "r0" in err
    assert {name_of(r.body) for r in rerun} == {"r1", "r2"}, "r0 is not run again"
    r1 = [tools_done(r.body) for r in rerun if name_of(r.body) == "r1"]
    listing = next(done[0] for done in r1 if done)
    assert "readme.md" in listing and "r1.part" not in listing, "a clean workspace"
    assert not (tmp_path / "work").exists()
    with open_store() as store:
        statuses = sorted(run.status for run in store.runs(task_id="r1"))
    assert statuses == ["interrupted", "pass"]


def test_bad_batch_files_are_clear_errors_with_line_numbers(tmp_path: Path) -> None:
    good = {"description": "Write a.txt", "workspace": "."}
    cases = {
        "not json": (f"{json.dumps(good)}\n{{oops\n", r"tasks.jsonl:2: not valid JSON"),
        "bad field": (
            f"{json.dumps(good)}\n\n" + json.dumps({**good, "tier": "huge", "colour": 1}) + "\n",
            r"tasks.jsonl:3: tier: .*\n  colour: unknown field",
        ),
        "same id": (
            json.dumps({**good, "id": "a"}) + "\n" + json.dumps({**good, "id": "a"}) + "\n",
            r"tasks.jsonl:2: task id 'a' is already used on line 1",
        ),
        "empty": ("\n\n", r"has no tasks"),
    }
    for name, (text, expected) in cases.items():
        # A folder each: a batch file is trusted as it is at its first use, so one rewritten
        # between cases would be refused as changed (localhand trust) before it is parsed.
        folder = tmp_path / name.replace(" ", "-")
        folder.mkdir()
        (folder / "tasks.jsonl").write_text(text)
        done = batch_command("tasks.jsonl", "--host", "127.0.0.1:9", cwd=folder)
        out, err = done.communicate(timeout=60)
        assert done.returncode == 2, err
        assert re.search(expected, err), err
        assert "Traceback" not in err and out == ""
