"""The dashboard's guards, end to end on a real uvicorn on loopback: the token on every request,
workspaces only under the configured roots, verify commands from the page classified and asked
for, request bodies capped and never echoed back."""

from __future__ import annotations

import os
import re
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from dashboard_helpers import client, dashboard_for, finished, ws_connect, ws_url
from localhand.config.settings import load_settings
from localhand.dashboard import start_dashboard
from localhand.dashboard.limits import MAX_BODY_BYTES
from localhand.dashboard.server import DashboardServer
from localhand.dashboard.settings import load_dashboard_settings
from localhand.errors import ConfigError
from localhand.store import Store
from localhand.testing import FakeOllama
from trust_helpers import pin
from workspaces import workspace_with


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The only workspace root; ``proj`` inside it is a valid workspace."""
    workspace_with(tmp_path / "root" / "proj", {"a.py": "print('a')\n"})
    return tmp_path / "root"


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama(script=["Done."] * 5, models={"qwen3:8b": {}}) as server:
        yield server


@pytest.fixture
def roots(root: Path) -> list[Path]:
    return [root]


def task(workspace: Path | str, **extra: Any) -> dict[str, Any]:
    """A page's task: one answer from the fake model (the simple path), then its checks."""
    return {"description": "Say done", "workspace": str(workspace), "agentic": False, **extra}


def pending(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 20
    while not (found := http.get("api/approvals", params={"run": run_id}).json()["approvals"]):
        assert time.monotonic() < deadline, "nothing was asked on the page"
        time.sleep(0.05)
    return found


# -- the token ---------------------------------------------------------------------------------
def test_every_request_without_the_token_is_refused_on_loopback(
    dashboard: DashboardServer, store: Store, root: Path
) -> None:
    base = dashboard.base_url
    assert base.startswith("http://127.0.0.1:")
    refused = [
        httpx.get(base),
        httpx.get(base + "static/app.js"),
        httpx.get(base + "api/runs"),
        httpx.get(base + "api/config"),
        httpx.post(base + "api/runs", json=task(root / "proj", verify=["touch pwned"])),
        httpx.post(base + "api/approvals/abc", json={"approve": True}),
        httpx.get(base + "api/runs", headers={"authorization": "Bearer " + "x" * 32}),
        httpx.get(base + "api/runs", headers={"authorization": f"Bearer {dashboard.token}x"}),
        httpx.get(base + "api/runs", cookies={f"localhand-token-{dashboard.port}": "x" * 32}),
    ]
    for response in refused:
        assert response.status_code == 401, response.request.url
        assert "open the URL printed by `localhand serve`" in response.text
    assert store.runs() == [] and not (root / "proj" / "pwned").exists()

    for headers in ({}, {"authorization": "Bearer wrong-token-wrong-token"}):
        with pytest.raises(InvalidStatus) as refusal:
            connect(ws_url(dashboard, "/ws/runs/x"), additional_headers=headers)
        assert refusal.value.response.status_code == 401
        assert b"localhand serve" in refusal.value.response.body
    with ws_connect(dashboard, "/ws/runs/x") as ws, pytest.raises(ConnectionClosed, match="4404"):
        ws.recv(timeout=5)  # with the token: in, and told there is no such run


def test_the_printed_url_keeps_the_token_in_a_cookie_and_drops_it_from_the_address(
    dashboard: DashboardServer, store: Store
) -> None:
    name = f"localhand-token-{dashboard.port}"
    with httpx.Client(base_url=dashboard.base_url) as browser:
        entry = browser.get(dashboard.url + "&tab=runs")
        assert entry.status_code == 303
        assert entry.headers["location"] == "/?tab=runs", "the token is not in the next address"
        cookie = entry.headers["set-cookie"]
        assert cookie.startswith(f"{name}={dashboard.token};")
        assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {p.strip() for p in cookie.split(";")}
        page = browser.get("/")
        assert page.status_code == 200 and "<title>localhand</title>" in page.text
        assert page.headers["x-frame-options"] == "DENY"
        assert browser.get("api/runs").json() == {"runs": [], "waiting": 0}
        header = f"{name}={browser.cookies[name]}"
    url = ws_url(dashboard, "/ws/runs/x")
    with (
        connect(url, additional_headers={"cookie": header}) as ws,
        pytest.raises(ConnectionClosed, match="4404"),
    ):
        ws.recv(timeout=5)

    wrong = httpx.get(dashboard.base_url + "?token=" + "w" * 32)
    assert wrong.status_code == 401 and "set-cookie" not in wrong.headers
    assert "wrong or outdated token" in wrong.text


def test_two_dashboards_on_one_host_keep_their_cookies_apart(
    dashboard: DashboardServer, store: Store
) -> None:
    with start_dashboard(store, port=0) as other, httpx.Client() as browser:
        assert other.token != dashboard.token
        browser.get(dashboard.url)
        browser.get(other.url)
        assert browser.get(dashboard.base_url + "api/runs").status_code == 200
        assert browser.get(other.base_url + "api/runs").status_code == 200
        stolen = {f"localhand-token-{other.port}": dashboard.token}
        assert httpx.get(other.base_url + "api/runs", cookies=stolen).status_code == 401


# -- workspaces --------------------------------------------------------------------------------
def test_workspaces_outside_the_roots_are_refused_after_resolving_them(
    dashboard: DashboardServer, http: httpx.Client, store: Store, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    (root / "inner").symlink_to(root / "proj")
    for workspace in ("/", "~", str(root / "escape"), f"{root}/../outside", f"{root}/proj/../.."):
        response = http.post("api/runs", json=task(workspace))
        assert response.status_code == 400, workspace
        message = response.json()["detail"]
        assert "outside the dashboard's workspace roots" in message and str(root) in message
        assert "[dashboard] workspaces" in message
    assert "resolves to" in http.post("api/runs", json=task(root / "escape")).json()["detail"]
    assert store.runs() == []

    inner = http.post("api/runs", json=task(root / "inner"))
    assert inner.status_code == 201
    events = finished(store, inner.json()["run_id"])
    assert events[0]["workspace"] == str(root / "proj"), "the run gets the resolved directory"
    assert http.post("api/runs", json=task(root)).status_code == 201, "the root itself is fine"
    config = http.get("api/config").json()
    assert config["roots"] == [str(root)] and config["cwd"] == str(root)


def test_roots_come_from_localhand_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / "code").mkdir(parents=True)
    (tmp_path / "conf" / "rel").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    path = tmp_path / "conf" / "localhand.toml"
    path.write_text('model = "qwen3:8b"\n[dashboard]\nworkspaces = ["~/code", "rel", "~/code"]\n')
    pin(path)  # the user trusts each version they write
    env = {"LOCALHAND_CONFIG": str(path)}
    roots = load_dashboard_settings(env=env).workspaces
    assert roots == (home / "code", tmp_path / "conf" / "rel")
    assert load_settings(env=env).model == "qwen3:8b", "the main settings ignore the table"
    assert load_dashboard_settings([tmp_path], env=env).workspaces == (tmp_path,), "flag wins"
    assert load_dashboard_settings(env={}, cwd=home).workspaces == (home,), "default: cwd"

    path.write_text('[localhand]\nmodel = "m"\n[localhand.dashboard]\nworkspaces = ["rel"]\n')
    pin(path)  # the user trusts each version they write
    assert load_dashboard_settings(env=env).workspaces == (tmp_path / "conf" / "rel",)
    assert load_settings(env=env).model == "m"
    bad = {
        '[dashboard]\nworkspaces = "~/code"\n': "must be a list of directories",
        "[dashboard]\nworkspaces = []\n": "is empty",
        '[dashboard]\nworkspaces = ["~/nope"]\n': "~/nope is not a directory",
        '[dashboard]\nworkspace = ["~/code"]\n': "unknown key(s) workspace; known: workspaces",
    }
    for text, message in bad.items():
        path.write_text(text)
        pin(path)  # the user trusts each version they write
        with pytest.raises(ConfigError, match=f"{re.escape(str(path))}.*{re.escape(message)}"):
            load_dashboard_settings(env=env)


def test_serve_refuses_a_root_that_does_not_exist(tmp_path: Path) -> None:
    code = "from localhand.cli import main; raise SystemExit(main())\n"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "serve",
            "--port",
            "0",
            "--db",
            str(tmp_path / "s.db"),
            "--workspace-root",
            str(tmp_path / "missing"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert f"workspace root {tmp_path / 'missing'} is not a directory" in done.stderr
    assert "Traceback" not in done.stderr


# -- verify commands from the page -------------------------------------------------------------
@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in home directory with a canary, so ``rm -rf ~`` could only ever reach it."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "canary.txt").write_text("alive\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def test_a_dangerous_verify_command_from_the_page_does_not_run_unless_approved(
    dashboard: DashboardServer,
    http: httpx.Client,
    store: Store,
    root: Path,
    home: Path,
    ollama: FakeOllama,
) -> None:
    started = http.post("api/runs", json=task(root / "proj", verify=["true", "rm -rf ~"]))
    assert started.status_code == 201
    run_id = started.json()["run_id"]
    (request,) = pending(http, run_id)
    assert (request["command"], request["risk"]) == ("rm -rf ~", "dangerous")
    assert ollama.chat_requests == [], "the task waits for the answer before it starts"

    assert http.post(f"api/approvals/{request['id']}", json={"approve": False}).status_code == 200
    events = finished(store, run_id)
    assert (home / "canary.txt").read_text() == "alive\n"
    assert ollama.chat_requests == [], "a refused verify command stops the task from starting"
    asked = [e for e in events if e["type"].startswith("approval_")]
    assert [(e["type"], e["step_id"], e["command"]) for e in asked] == [
        ("approval_needed", "verify", "rm -rf ~"),
        ("approval_decided", "verify", "rm -rf ~"),
    ], "only the dangerous one is asked for"
    assert (asked[1]["approved"], asked[1]["by"]) == (False, "page")
    result = events[-1]["result"]
    assert (result["status"], result["termination_reason"]) == ("error", "cancelled")
    assert "'rm -rf ~' (dangerous) was not approved: the user denied it" in result["error"]


def test_a_verify_command_still_waiting_when_the_dashboard_stops_never_runs(
    store: Store, ollama: FakeOllama, root: Path, home: Path
) -> None:
    server = dashboard_for(store, ollama, [root])
    try:
        with client(server) as api:
            run_id = api.post("api/runs", json=task(root / "proj", verify=["rm -rf ~"])).json()
            pending(api, run_id["run_id"])
    finally:
        server.stop()
    events = finished(store, run_id["run_id"])
    assert (home / "canary.txt").exists()
    assert events[-1]["result"]["error"].endswith(
        "the dashboard stopped before anyone answered. The task did not start and nothing ran"
    )


def test_an_approved_verify_command_runs_when_the_task_ends(
    dashboard: DashboardServer, http: httpx.Client, store: Store, root: Path
) -> None:
    workspace = root / "proj"
    run_id = http.post("api/runs", json=task(workspace, verify=["rm -rf *"])).json()["run_id"]
    (request,) = pending(http, run_id)
    assert request["risk"] == "dangerous" and (workspace / "a.py").exists()
    http.post(f"api/approvals/{request['id']}", json={"approve": True})
    events = finished(store, run_id)
    assert events[-1]["result"]["status"] == "pass"
    assert [c["name"] for c in events[-1]["result"]["verification"]] == ["rm -rf *"]
    assert not (workspace / "a.py").exists()


# -- request bodies ----------------------------------------------------------------------------
def raw_request(server: DashboardServer, head: str, body_parts: list[bytes]) -> tuple[int, bytes]:
    """Send ``head`` and then as much of ``body_parts`` as the server takes before it answers;
    returns the status and the response. The body is never sent whole."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head.encode())
        for part in body_parts:
            if select.select([sock], [], [], 0.05)[0]:
                break  # the server answered already: the rest of the body is not wanted
            try:
                sock.sendall(part)
            except (BrokenPipeError, ConnectionResetError):
                break  # it closed while this part was on its way: its answer is readable
        response = b""
        while b"\r\n\r\n" not in response or len(response) < 400:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                if response:
                    break  # the answer came whole before the reset of the unread body
                raise
            if not chunk:
                break
            response += chunk
    return int(response.split(b" ", 2)[1]), response


def test_a_body_over_the_cap_gets_413_before_it_is_read(
    dashboard: DashboardServer, http: httpx.Client, store: Store, root: Path
) -> None:
    auth = f"Authorization: Bearer {dashboard.token}\r\nHost: 127.0.0.1\r\n"
    # A declared body over the cap is refused on its headers: the answer comes before any of
    # the body is sent (so the test never races the server's close against its own sending).
    for path, size in (("/api/runs", 1_000_000), ("/api/approvals/abc", MAX_BODY_BYTES + 1)):
        head = f"POST {path} HTTP/1.1\r\n{auth}Content-Length: {size}\r\n\r\n"
        status, response = raw_request(dashboard, head, [])
        assert status == 413 and b"larger than 64 KiB" in response
    # The same with 1 KiB of the body already on its way.
    head = f"POST /api/runs HTTP/1.1\r\n{auth}Content-Length: 1000000\r\n\r\n"
    status, response = raw_request(dashboard, head, [b"{" + b" " * 1023])
    assert status == 413 and b"larger than 64 KiB" in response
    # Chunked, no length: refused once 80 KiB arrived, though the body would go on.
    head = f"POST /api/runs HTTP/1.1\r\n{auth}Transfer-Encoding: chunked\r\n\r\n"
    chunk = b"%x\r\n%s\r\n" % (16384, b" " * 16384)
    status, response = raw_request(dashboard, head, [chunk] * 5)
    assert status == 413
    assert store.runs() == []
    assert http.post("api/runs", json=task(root / "proj")).status_code == 201, "still serving"


def test_errors_name_the_problem_without_echoing_the_request(
    dashboard: DashboardServer, http: httpx.Client, store: Store, root: Path
) -> None:
    secret = "SECRET-" * 4000  # 28 000 characters, over the description's limit
    long = http.post("api/runs", json=task(root / "proj", description=secret))
    assert long.status_code == 422
    assert long.json() == {
        "detail": [
            {
                "loc": ["body", "description"],
                "msg": "String should have at most 20000 characters",
                "type": "string_too_long",
            }
        ]
    }
    unknown = http.post("api/runs", json={**task(root / "proj"), "x" * 5000: secret})
    assert unknown.status_code == 422 and "SECRET" not in unknown.text
    assert len(unknown.content) < 500
    broken = http.post("api/runs", content=b'{"description": "' + secret.encode())
    assert broken.status_code == 422 and "SECRET" not in broken.text
    wrong_type = http.post("api/approvals/abc", json={"approve": secret})
    assert wrong_type.status_code == 422 and "SECRET" not in wrong_type.text
    outside = http.post("api/runs", json=task("/" + "d" * 4000))
    assert outside.status_code == 400 and len(outside.content) < 1000
    missing = http.get("api/runs/" + "f" * 3000)
    assert missing.status_code == 404 and len(missing.content) < 1200
    assert store.runs() == []


def test_a_bad_token_from_the_environment_is_a_clear_error(tmp_path: Path) -> None:
    code = "from localhand.cli import main; raise SystemExit(main())\n"
    env = {**os.environ, "LOCALHAND_TOKEN": "short"}
    done = subprocess.run(
        [sys.executable, "-c", code, "serve", "--port", "0", "--db", str(tmp_path / "s.db")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 2 and "at least 16 characters" in done.stderr
