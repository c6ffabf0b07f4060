"""The dashboard's API and WebSocket on a real uvicorn, with runs against the fake Ollama."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from dashboard_helpers import client, ws_connect
from localhand.config.settings import Settings
from localhand.dashboard import check_bind, start_dashboard
from localhand.dashboard.server import DashboardServer
from localhand.errors import ConfigError
from localhand.events import EventBus, TaskStarted, Warning
from localhand.models.scripted import ScriptedModel, call
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.session.recording import RunRecording
from localhand.store import Store
from localhand.testing import FakeOllama
from workspaces import workspace_with


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


def gated(gate: threading.Event, item: Any) -> Any:
    """A script item the fake serves only once the test opens the gate."""
    return lambda body: item if gate.wait(20) else "gate never opened"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return workspace_with(tmp_path / "ws", {"a.py": "print('a')\n"})


@pytest.fixture
def gate() -> threading.Event:
    return threading.Event()


@pytest.fixture
def ollama(gate: threading.Event) -> Iterator[FakeOllama]:
    script = [
        tool_call("read_file", path="a.py"),
        tool_call("list_directory", path="."),
        gated(gate, tool_call("read_file", path="missing.py")),
        "Done: a.py prints a.",
    ]
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        yield server


def receive_until(ws: ClientConnection, stop: str) -> list[dict[str, Any]]:
    messages = []
    while True:
        message = json.loads(ws.recv(timeout=20))
        messages.append(message)
        if message["type"] == stop:
            return messages


def start_run(server: DashboardServer, workspace: Path) -> str:
    with client(server) as api:
        response = api.post(
            "api/runs",
            json={
                "description": "Read a.py and report what it prints",
                "workspace": str(workspace),
            },
        )
    assert response.status_code == 201, response.text
    return response.json()["run_id"]


def test_page_and_assets_are_served(dashboard: DashboardServer) -> None:
    with httpx.Client(follow_redirects=True) as browser:
        page = browser.get(dashboard.url)
        assert page.status_code == 200 and "<title>localhand</title>" in page.text
        for asset in ("app.js", "plan.js", "control.js", "style.css"):
            assert browser.get(dashboard.base_url + "static/" + asset).status_code == 200


def test_a_page_opened_late_gets_every_event_then_live_ones_without_gaps_or_repeats(
    dashboard: DashboardServer,
    http: httpx.Client,
    store: Store,
    workspace: Path,
    gate: threading.Event,
) -> None:
    run_id = start_run(dashboard, workspace)
    with ws_connect(dashboard, f"/ws/runs/{run_id}") as ws:
        first = receive_until(ws, "tool_call")
        first += receive_until(ws, "tool_call")  # the run now waits at the gate
    assert http.get("api/runs").json()["runs"][0]["status"] == "running"
    last = first[-1]["seq"]
    gate.set()
    # A reconnecting page resumes after the last event it saw.
    with ws_connect(dashboard, f"/ws/runs/{run_id}?after={last}") as ws:
        rest = receive_until(ws, "stream_end")
    end = rest.pop()
    seen = first + rest
    recorded = [event.to_dict() for event in store.events(run_id)]
    assert seen == recorded, "every event once, in order, exactly as stored"
    assert [m["type"] for m in seen].count("tool_call") == 3
    assert seen[-1]["type"] == "task_finished"
    assert seen[-1]["result"]["output"] == "Done: a.py prints a."
    assert end["run"]["status"] == "unverified"  # no checks
    assert end["seq"] == seen[-1]["seq"]
    failed = [m for m in seen if m["type"] == "tool_call" and not m["ok"]]
    assert [m["args_summary"] for m in failed] == ['{"path": "missing.py"}']

    detail = http.get(f"api/runs/{run_id[:6]}").json()
    assert detail["run"]["id"] == run_id and detail["events"] == recorded
    later = http.get(f"api/runs/{run_id}?after={last}").json()["events"]
    assert later == recorded[len(first) :]


def test_events_written_by_another_process_reach_the_socket(
    dashboard: DashboardServer, tmp_path: Path
) -> None:
    other = Store(tmp_path / "runs.db")  # a second connection: no doorbell, found by polling
    recorder = other.recorder()
    recorder(
        TaskStarted(task_id="elsewhere", description="d", model="m", workspace="", max_iterations=3)
    )
    run_id = other.runs(1)[0].id
    with ws_connect(dashboard, f"/ws/runs/{run_id}") as ws:
        assert json.loads(ws.recv(timeout=10))["type"] == "task_started"
        recorder(Warning(task_id="elsewhere", message="from another process"))
        assert json.loads(ws.recv(timeout=10))["message"] == "from another process"


def test_bad_requests_get_clear_errors(
    dashboard: DashboardServer, http: httpx.Client, workspace: Path
) -> None:
    missing = http.post("api/runs", json={"description": "x", "workspace": f"{workspace}/no"})
    assert missing.status_code == 400
    expected = f"workspace {workspace}/no is not a directory on this machine"
    assert missing.json()["detail"] == expected
    empty = http.post("api/runs", json={"description": "", "workspace": "."})
    assert empty.status_code == 422
    assert empty.json()["detail"] == [
        {
            "loc": ["body", "description"],
            "msg": "String should have at least 1 character",
            "type": "string_too_short",
        }
    ]
    extra = http.post(
        "api/runs", json={"description": "x", "workspace": str(workspace), "shell": "rm -rf /"}
    )
    assert extra.status_code == 422
    assert extra.json()["detail"][0]["loc"] == ["body", "shell"]
    assert "rm -rf" not in extra.text, "the request is not echoed back"
    assert http.get("api/runs/abcdef").status_code == 404
    with (
        ws_connect(dashboard, "/ws/runs/abcdef") as ws,
        pytest.raises(ConnectionClosed, match="4404"),
    ):
        ws.recv(timeout=5)


def test_other_sites_cannot_drive_a_local_dashboard(
    dashboard: DashboardServer, http: httpx.Client, workspace: Path
) -> None:
    # Even with the token (a page on another site cannot have it, but it could be leaked):
    rebinding = http.get("api/runs", headers={"host": "attacker.example"})
    assert rebinding.status_code == 400
    body = {"description": "x", "workspace": str(workspace)}
    cross = http.post("api/runs", json=body, headers={"origin": "https://attacker.example"})
    assert cross.status_code == 403
    form = http.post("api/runs", data=body)  # a plain HTML form post
    assert form.status_code == 422
    with pytest.raises(InvalidStatus):
        ws_connect(dashboard, "/ws/runs/x", origin="https://attacker.example")
    assert http.get("api/runs").json()["runs"] == []


def test_a_given_token_is_the_one_required(store: Store, tmp_path: Path) -> None:
    token = "s3cret-token-of-some-length"
    with start_dashboard(store, port=0, token=token, workspaces=[tmp_path]) as server:
        base = server.base_url
        assert server.url == f"{base}?token={token}"
        assert httpx.get(base + "api/runs").status_code == 401
        wrong = httpx.get(base + "api/runs", headers={"authorization": "Bearer nope"})
        assert wrong.status_code == 401
        bearer = httpx.get(base + "api/runs", headers={"authorization": f"Bearer {token}"})
        assert bearer.status_code == 200
        assert httpx.get(base + f"api/runs?token={token}").status_code == 200
        with pytest.raises(InvalidStatus):
            connect(base.replace("http", "ws") + "ws/runs/x")
        url = base.replace("http", "ws") + f"ws/runs/x?token={token}"
        with connect(url) as ws, pytest.raises(ConnectionClosed, match="4404"):
            ws.recv(timeout=5)


def test_binding_beyond_loopback_needs_a_flag_and_every_address_a_token() -> None:
    for loopback in ("127.0.0.1", "localhost", "::1"):
        generated = check_bind(loopback, None, False)
        assert len(generated) >= 16
    assert check_bind("127.0.0.1", None, False) != check_bind("127.0.0.1", None, False)
    with pytest.raises(ConfigError, match="--allow-remote"):
        check_bind("0.0.0.0", None, False)
    generated = check_bind("0.0.0.0", None, True)
    assert generated is not None and len(generated) >= 16
    assert check_bind("192.0.2.1", "a-token-long-enough", True) == "a-token-long-enough"
    assert check_bind("127.0.0.1", "a-token-long-enough", False) == "a-token-long-enough"
    with pytest.raises(ConfigError, match="at least 16"):
        check_bind("0.0.0.0", "short", True)
    with pytest.raises(ConfigError, match="letters, digits"):
        check_bind("127.0.0.1", "a token; with spaces", False)


def test_a_busy_port_is_a_clear_error(store: Store) -> None:
    with start_dashboard(store, port=0) as first:
        with pytest.raises(ConfigError, match="in use"):
            start_dashboard(store, port=first.port)
        with start_dashboard(store, port=first.port, port_fallback=True) as second:
            assert second.port != first.port


def test_run_recording_serves_the_run_live_and_closes_runs_that_never_started(
    tmp_path: Path,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(RunRecording, "LINGER_S", 0.1)
    db = tmp_path / "cli.db"
    task = Task("Read a.py", workspace=workspace)
    bus = EventBus()
    model = ScriptedModel([call("read_file", path="a.py"), "It prints a."], name="qwen3:8b")

    def serve(store: Store, settings: Any) -> Any:
        return start_dashboard(store, port=0, settings=settings, port_fallback=True)

    with RunRecording(task, bus, serve=serve, db=db) as recording:
        assert recording.server is not None and recording.run_id is not None
        printed = capsys.readouterr().err
        assert f"{recording.server.url}#/runs/{recording.run_id}" in printed
        assert f"?token={recording.server.token}" in printed, "the printed URL lets you in"
        assert httpx.get(recording.server.base_url + "api/runs").status_code == 401
        with client(recording.server) as api:
            page = api.get(f"api/runs/{recording.run_id}").json()
        assert page["run"]["status"] == "running"
        run_task(task, Settings(), bus=bus, model=model, follow_up_dir=tmp_path / "f")
    with pytest.raises(httpx.ConnectError):
        httpx.get(recording.server.url)
    assert Store(db).run(recording.run_id).status == "unverified"  # no checks

    broken = Task("Read a.py", workspace=tmp_path / "missing")
    with pytest.raises(ConfigError), RunRecording(broken, EventBus(), db=db) as failed:
        run_task(broken, Settings(), model=model)
    run = Store(db).run(failed.run_id or "")
    assert (run.status, run.termination_reason) == ("error", "error")
    assert run.error is not None and "is not a directory" in run.error


SERVE = "from localhand.cli import main; raise SystemExit(main())\n"


@pytest.mark.usefixtures("sigint_reaches_children")  # even when pytest runs in the background
def test_serve_runs_in_the_foreground_until_interrupted(tmp_path: Path) -> None:
    command = [sys.executable, "-c", SERVE, "serve", "--port", "0", "--db", str(tmp_path / "s.db")]
    env = {k: v for k, v in os.environ.items() if k != "LOCALHAND_TOKEN"}
    server = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=tmp_path, env=env
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        url = re.search(r"(http://127\.0\.0\.1:\d+/)\?token=([\w.~+/=-]{16,})", line)
        assert url, line
        roots = server.stderr.readline()
        assert roots.strip() == f"tasks from the page may use workspaces under: {tmp_path}"
        base = url.group(1)
        assert httpx.get(base + "api/runs").status_code == 401, "a token on loopback too"
        with httpx.Client() as browser:
            assert browser.get(url.group(0)).status_code == 303
            assert browser.get(base + "api/runs").json() == {"runs": [], "waiting": 0}
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=10) == 0
        assert "Traceback" not in server.stderr.read()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()

    refused = subprocess.run(
        [sys.executable, "-c", SERVE, "serve", "--host", "0.0.0.0", "--db", str(tmp_path / "s.db")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert refused.returncode == 2
    assert "--allow-remote" in refused.stderr and "Traceback" not in refused.stderr
