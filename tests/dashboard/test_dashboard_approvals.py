"""Approving commands on the dashboard: the registry, and runs started from the page that wait
for the page's answer on a real uvicorn against the fake Ollama."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.console import Console

from dashboard_helpers import client, dashboard_for, finished
from localhand.cli.view import TerminalView
from localhand.config.settings import Settings
from localhand.dashboard.approvals import PageApprovals, PageApprover
from localhand.dashboard.server import DashboardServer
from localhand.events import ApprovalDecided, EventBus, EventLog
from localhand.models.scripted import ScriptedModel, call
from localhand.run.task import Task
from localhand.safety.approval.approver import TerminalApprover
from localhand.safety.risk.classify import Risk
from localhand.session.api import run_task
from localhand.store import Store
from localhand.testing import FakeOllama

DANGER = Risk("dangerous", ("deletes outside the workspace",))
# Dangerous (it deletes the whole workspace) yet inside what the command sandbox lets it
# change, so an approved one really deletes.
DELETE = "rm -rf *"


class Asking:
    """A PageApprover's answer, asked in a thread of its own."""

    def __init__(self, approver: PageApprover, command: str = "rm -rf ../x") -> None:
        self.approver = approver
        self.answer: bool | None = None
        self.thread = threading.Thread(target=self._ask, args=(command,), daemon=True)
        self.thread.start()

    def _ask(self, command: str) -> None:
        self.answer = self.approver.approve(command, DANGER)

    def done(self, timeout: float = 5.0) -> bool | None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the approver is still waiting"
        return self.answer


def wait_pending(approvals: PageApprovals, run_id: str | None = None) -> list[Any]:
    deadline = time.monotonic() + 10
    while not (found := approvals.pending(run_id)):
        assert time.monotonic() < deadline, "no request became pending"
        time.sleep(0.01)
    return found


def test_a_decision_wakes_the_waiting_run_and_removes_the_request() -> None:
    approvals = PageApprovals()
    asking = Asking(approvals.approver("run-1"), "rm -rf ../x")
    other = Asking(approvals.approver("run-2"), "sudo true")
    (request,) = wait_pending(approvals, "run-1")
    assert (request.run_id, request.command, request.risk) == ("run-1", "rm -rf ../x", "dangerous")
    assert request.reasons == ("deletes outside the workspace",)
    wait_pending(approvals, "run-2")
    assert len(approvals.pending()) == 2
    assert approvals.decide(request.id, True)
    assert asking.done() is True
    assert asking.approver.decided_by == "page"
    assert [r.run_id for r in approvals.pending()] == ["run-2"]
    assert not approvals.decide(request.id, False), "an answered request is gone"
    assert not approvals.decide("no-such-id", True)

    (second,) = approvals.pending("run-2")
    assert approvals.decide(second.id, False)
    assert other.done() is False
    assert other.approver.refusal == "the user denied it on the dashboard"
    assert approvals.pending() == []


def test_nobody_answering_is_a_refusal_that_says_so() -> None:
    approvals = PageApprovals()
    approver = approvals.approver("run-1", timeout_s=0.2)
    started = time.monotonic()
    assert approver.approve("rm -rf ../x", DANGER) is False
    assert time.monotonic() - started >= 0.2
    assert approver.refusal == "nobody answered on the dashboard within 0.2 s"
    assert approver.decided_by == "timeout"
    assert approvals.pending() == []


def test_closing_refuses_what_waits_and_everything_later() -> None:
    approvals = PageApprovals()
    asking = Asking(approvals.approver("run-1"))
    wait_pending(approvals)
    approvals.close()
    assert asking.done() is False
    assert asking.approver.decided_by == "shutdown"
    assert "stopped" in asking.approver.refusal
    assert approvals.pending() == []
    later = approvals.approver("run-2", timeout_s=1)
    assert later.approve("sudo true", DANGER) is False and later.decided_by == "shutdown"


def test_every_approval_is_followed_by_its_decision_event(tmp_path: Path) -> None:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    model = ScriptedModel([call("run_command", command="sudo true"), "done"])
    task = Task("Run it", workspace=tmp_path, agentic=True)
    run_task(task, Settings(), bus=bus, model=model)  # nobody to ask
    types = [e.type for e in log.events]
    assert types.index("approval_decided") == types.index("approval_needed") + 1
    (decided,) = log.of_type("approval_decided")
    assert isinstance(decided, ApprovalDecided)
    assert (decided.command, decided.approved, decided.by) == ("sudo true", False, "nobody")
    assert decided.to_dict()["type"] == "approval_decided"
    assert TerminalApprover(interactive=False).decided_by == "nobody"  # no terminal to ask
    assert TerminalApprover(interactive=True).decided_by == "terminal"

    out = io.StringIO()
    TerminalView(Console(file=out, width=200))(decided)
    assert out.getvalue().strip() == "✗ denied (nobody) sudo true"


# -- through the dashboard ---------------------------------------------------------------------
def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A directory in the workspace (its parent) that DELETE removes."""
    victim = tmp_path / "ws" / "victim"
    victim.mkdir(parents=True)
    (victim / "keep.txt").write_text("precious\n")
    return victim


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    script = [tool_call("run_command", command=DELETE), "Done."]
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        yield server


def start_and_wait_for_approval(server: DashboardServer, workspace: Path) -> tuple[str, dict]:
    api = client(server)
    started = api.post(
        "api/runs",
        json={
            "description": "Clean up the victim directory",
            "workspace": str(workspace),
            "agentic": True,
        },
    )
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]
    deadline = time.monotonic() + 20
    while True:
        pending = api.get("api/approvals", params={"run": run_id}).json()
        if pending["approvals"]:
            (request,) = pending["approvals"]
            return run_id, request
        assert time.monotonic() < deadline, "the run never asked for approval"
        time.sleep(0.05)


def test_a_command_approved_on_the_page_runs(
    dashboard: DashboardServer, http: httpx.Client, store: Store, victim: Path
) -> None:
    run_id, request = start_and_wait_for_approval(dashboard, victim.parent)
    assert request["command"] == DELETE and request["risk"] == "dangerous"
    assert request["reasons"] and request["run_id"] == run_id
    assert http.get("api/approvals").json()["approvals"] == [request]
    by_prefix = http.get("api/approvals", params={"run": run_id[:6]})
    assert by_prefix.json()["approvals"] == [request]
    assert http.get("api/approvals?run=abcdef").status_code == 404
    assert victim.exists(), "nothing runs before the answer"

    answer = http.post(f"api/approvals/{request['id']}", json={"approve": True})
    assert answer.status_code == 200 and answer.json() == {"id": request["id"], "approved": True}
    events = finished(store, run_id)
    assert not victim.exists()
    types = [e["type"] for e in events]
    assert types.index("approval_decided") == types.index("approval_needed") + 1
    decided = events[types.index("approval_decided")]
    assert (decided["command"], decided["approved"], decided["by"]) == (DELETE, True, "page")
    (tool,) = [e for e in events if e["type"] == "tool_call"]
    assert tool["ok"] is True
    assert events[-1]["result"]["status"] == "unverified"  # no checks: the model's word only
    again = http.post(f"api/approvals/{request['id']}", json={"approve": True})
    assert again.status_code == 404


def test_a_command_denied_on_the_page_is_refused_and_the_model_is_told(
    dashboard: DashboardServer, http: httpx.Client, store: Store, victim: Path, ollama: FakeOllama
) -> None:
    run_id, request = start_and_wait_for_approval(dashboard, victim.parent)
    url = f"api/approvals/{request['id']}"
    for bad in ({"approve": "yes"}, {}, {"approve": True, "extra": 1}):
        assert http.post(url, json=bad).status_code == 422
    assert http.post(url, content=b"not json").status_code == 422
    assert http.post(url, json={"approve": False}).status_code == 200
    events = finished(store, run_id)
    assert (victim / "keep.txt").read_text() == "precious\n"
    decided = next(e for e in events if e["type"] == "approval_decided")
    assert (decided["approved"], decided["by"]) == (False, "page")
    (tool,) = [e for e in events if e["type"] == "tool_call"]
    assert tool["ok"] is False
    told = ollama.chat_requests[-1].body["messages"][-1]
    assert told["role"] == "tool" and told["content"].startswith("Refused:")
    assert "the user denied it on the dashboard" in told["content"]


def test_a_denial_with_a_reason_tells_the_model_why_and_records_it(
    dashboard: DashboardServer, http: httpx.Client, store: Store, victim: Path, ollama: FakeOllama
) -> None:
    run_id, request = start_and_wait_for_approval(dashboard, victim.parent)
    url = f"api/approvals/{request['id']}"
    assert http.post(url, json={"approve": False, "reason": 7}).status_code == 422
    assert http.post(url, json={"approve": False, "reason": "x" * 4001}).status_code == 422
    said = "move it to\n  old/ \x1b[2Jinstead"  # one line, inert, as the terminal's reason
    answer = http.post(url, json={"approve": False, "reason": said})
    assert answer.status_code == 200
    events = finished(store, run_id)
    assert (victim / "keep.txt").read_text() == "precious\n"
    decided = next(e for e in events if e["type"] == "approval_decided")
    assert (decided["approved"], decided["by"]) == (False, "page")
    assert decided["reason"] == "move it to old/ \\x1b[2Jinstead"
    told = ollama.chat_requests[-1].body["messages"][-1]
    assert told["role"] == "tool" and told["content"].startswith("Refused:")
    assert (
        'denied it on the dashboard and said: "move it to old/ \\x1b[2Jinstead"' in told["content"]
    )


def test_a_reason_given_with_a_yes_is_not_kept() -> None:
    approvals = PageApprovals()
    asking = Asking(approvals.approver("run1"))
    (request,) = wait_pending(approvals, "run1")
    assert approvals.decide(request.id, True, reason="fine, but be careful")
    assert asking.done() is True and asking.approver.reason == ""


def test_other_sites_and_token_less_clients_cannot_answer_approvals(
    dashboard: DashboardServer, http: httpx.Client, store: Store, victim: Path
) -> None:
    run_id, request = start_and_wait_for_approval(dashboard, victim.parent)
    url = f"api/approvals/{request['id']}"
    stranger = httpx.post(dashboard.base_url + url, json={"approve": True})
    assert stranger.status_code == 401 and "localhand serve" in stranger.text
    cross = http.post(url, json={"approve": True}, headers={"origin": "https://attacker.example"})
    assert cross.status_code == 403
    rebinding = http.get("api/approvals", headers={"host": "attacker.example"})
    assert rebinding.status_code == 400
    assert [r["id"] for r in http.get("api/approvals").json()["approvals"]] == [request["id"]], (
        "still pending"
    )
    assert http.post(url, json={"approve": False}).status_code == 200
    finished(store, run_id)
    assert victim.exists()


def test_stopping_the_dashboard_refuses_what_waits(
    store: Store, ollama: FakeOllama, victim: Path, tmp_path: Path
) -> None:
    server = dashboard_for(store, ollama, [tmp_path])
    try:
        run_id, _ = start_and_wait_for_approval(server, victim.parent)
    finally:
        server.stop()
    events = finished(store, run_id)
    decided = next(e for e in events if e["type"] == "approval_decided")
    assert (decided["approved"], decided["by"]) == (False, "shutdown")
    assert victim.exists()
