"""Cancellation is a value: ``Session.cancel`` from another thread, a cancel request file from
another process (the dashboard's Stop), and Ctrl-C at the command line all end the run
``cancelled`` with its partial Result verified and recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from dashboard_helpers import client
from localhand.cancel import POLL_S, Cancellation, request_cancel, request_file
from localhand.config.settings import Settings
from localhand.dashboard import start_dashboard
from localhand.models.base import ChatOptions
from localhand.models.scripted import ScriptedModel, call
from localhand.run.task import Task
from localhand.session.door import Session
from localhand.store import Store
from localhand.testing import FakeOllama
from localhand.types import Message, Reply
from workspaces import workspace_with


class Pausing(ScriptedModel):
    """Calls ``at_call`` (from the run's own thread) when asked for reply number ``n``."""

    def __init__(self, steps: Sequence[Any], n: int, at_call: Callable[[], None]) -> None:
        super().__init__(steps)
        self.n, self.at_call = n, at_call

    def chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        options: ChatOptions | None = None,
    ) -> Reply:
        if len(self.calls) + 1 == self.n:
            self.at_call()
        return super().chat(messages, tools, options)


LISTING = [call("read_file", path=f"f{n}.txt") for n in range(6)] + ["Read."]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return workspace_with(tmp_path / "ws", {"a.txt": "a\n"})


def test_cancel_from_another_thread_ends_the_run_cancelled_and_recorded(
    workspace: Path, tmp_path: Path
) -> None:
    asked, go_on = threading.Event(), threading.Event()

    def wait_for_the_cancel() -> None:
        asked.set()
        assert go_on.wait(10)

    model = Pausing(LISTING, 3, wait_for_the_cancel)
    task = Task("List the files", workspace=workspace, agentic=True)
    session = Session(task, Settings(), model=model)
    results: list[Any] = []
    db = tmp_path / "runs.db"

    def run() -> None:
        with session.recording(db=db) as recording:
            results.append((recording.run_id, session.run()))

    thread = threading.Thread(target=run)
    thread.start()
    assert asked.wait(10)
    session.cancel("stopped by a test")  # another thread: the run's reply is still in flight
    go_on.set()
    thread.join(20)
    ((run_id, result),) = results
    assert (result.termination_reason, result.iterations_used) == ("cancelled", 3)
    assert result.output == "stopped by a test"
    assert len(model.calls) == 3, "nothing was asked after the cancel"
    recorded = Store(db).run(run_id)
    assert (recorded.status, recorded.termination_reason) == ("fail", "cancelled")
    assert recorded.iterations == 3, "the partial Result is the one recorded"


def test_a_cancel_request_file_stops_a_run_started_elsewhere(
    workspace: Path, tmp_path: Path
) -> None:
    ids: list[str] = []

    def request_from_another_process() -> None:
        request_cancel(ids[0])  # what the dashboard's Stop does for a run it did not start
        time.sleep(POLL_S * 2)  # the file is looked at no more often than that

    model = Pausing(LISTING, 2, request_from_another_process)
    session = Session(
        Task("List the files", workspace=workspace, agentic=True), Settings(), model=model
    )
    with session.recording(db=tmp_path / "runs.db") as recording:
        assert recording.run_id is not None
        ids.append(recording.run_id)
        result = session.run()
    assert result.termination_reason == "cancelled"
    assert "another process" in result.output
    assert len(model.calls) == 2
    assert not request_file(ids[0]).exists(), "the request is removed with its run"


def test_a_cancelled_switch_stops_a_run_before_it_starts(workspace: Path) -> None:
    model = ScriptedModel([])
    session = Session(Task("List", workspace=workspace, agentic=True), Settings(), model=model)
    session.cancel("cancelled by the MCP client")
    result = session.run()
    assert (result.status, result.termination_reason) == ("error", "cancelled")
    assert result.error == "cancelled by the MCP client" and model.calls == []


def test_a_cancel_request_names_a_run_id_never_a_path(tmp_path: Path) -> None:
    from localhand.errors import ConfigError

    with pytest.raises(ConfigError, match="not a run id"):
        request_cancel("../../etc", tmp_path)
    switch = Cancellation()
    switch.watch(request_cancel("abc123", tmp_path))
    with pytest.raises(Exception, match="another process"):
        switch.check()


def test_the_dashboards_stop_asks_a_running_run_and_refuses_a_finished_one(
    workspace: Path,
) -> None:
    store = Store(":memory:")
    running = store.begin_run(Task("elsewhere", workspace=workspace), model="m")
    with start_dashboard(store, port=0) as server, client(server) as api:
        answer = api.post(f"api/runs/{running}/cancel")
        assert answer.status_code == 200, answer.text
        assert request_file(running).exists(), "a run of another process is asked by file"
        store.finish_run(running, {"status": "fail", "termination_reason": "cancelled"})
        assert api.post(f"api/runs/{running}/cancel").status_code == 409


CLI = "from localhand.cli import main; raise SystemExit(main())\n"


@pytest.mark.usefixtures("sigint_reaches_children")
def test_ctrl_c_at_the_command_line_ends_the_run_cancelled(workspace: Path, tmp_path: Path) -> None:
    script = [
        {
            "content": "",
            "tool_calls": [{"function": {"name": "list_directory", "arguments": {"path": "."}}}],
        }
    ] * 8
    with FakeOllama(
        script=[*script, {"content": "Listed."}], models={"qwen3:8b": {}}, latency=1.0
    ) as server:
        env = {**os.environ, "OLLAMA_HOST": server.url, "NO_COLOR": "1"}
        command = [
            sys.executable,
            "-c",
            CLI,
            "run",
            "List the files, again and again",
            "-w",
            str(workspace),
            "--model",
            "qwen3:8b",
            "--agentic",
            "--json",
        ]
        child = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 30
            while not [r for r in server.requests if r.path == "/api/chat"]:
                assert time.monotonic() < deadline and child.poll() is None
                time.sleep(0.05)
            child.send_signal(signal.SIGINT)  # Ctrl-C, while the model's reply is on its way
            out, err = child.communicate(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
    result = json.loads(out.strip().splitlines()[-1])
    assert result["termination_reason"] == "cancelled", err
    assert result["iterations_used"] < 8
    assert child.returncode == 130, "Ctrl-C exits 130, after the Result was written"
