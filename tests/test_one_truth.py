"""One truth for every door: one scripted failing plan (agentic: the model drafts it, a step
fails, the model changes its command, it fails again, the model aborts) run through the
terminal (the real CLI in a child process, plain, ``--json`` and ``--jsonl``), the dashboard's
HTTP API, the MCP server over stdio (the official client) and ACP over stdio (as an editor
speaks it) ends with the same status, termination reason, reason and evidence everywhere,
and each door says it to its reader: the terminal's lines, the editor's messages, plan and
tool calls."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import optional_deps

optional_deps.module("mcp", "the MCP SDK", "pip install -e '.[mcp]' (or '.[dev]')")
optional_deps.module("acp", "the ACP SDK", "pip install -e '.[acp]' (or '.[dev]')")

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters, stdio_client  # noqa: E402

from acp_helpers import Editor, prompt, talk  # noqa: E402
from cli_helpers import localhand  # noqa: E402
from dashboard_helpers import client, finished, served_dashboard  # noqa: E402
from localhand.store import Store, open_store  # noqa: E402
from localhand.testing import FakeOllama  # noqa: E402

pytestmark = pytest.mark.timeout(300)

GOAL = "Show the notes"
ABORTED = "there are no notes anywhere in the workspace"
STOPPED = f"(aborted): the agent aborted the plan: {ABORTED}"
DRAFT = {
    "goal": GOAL,
    "steps": [
        {"description": "Say ready", "command": "echo ready"},
        {"description": "Show the notes", "command": "cat notes.txt"},
    ],
}
SCRIPT: list[Any] = [
    json.dumps(DRAFT),
    json.dumps({"action": "modify", "reason": "maybe markdown", "new_command": "cat notes.md"}),
    json.dumps({"action": "abort", "reason": ABORTED}),
    *["(nothing more to say)"] * 3,  # the same spare replies at every door
]
MODEL = {"qwen3:8b": {}}


def truth(result: dict[str, Any]) -> dict[str, Any]:
    """What every door must agree on: how it ended and why, each step, and the evidence (the
    verification entries whole, whatever fields they carry)."""
    keys = ("status", "termination_reason", "error", "output", "mode", "corrections_used")
    return {
        **{key: result.get(key) for key in (*keys, "steps_added", "model_used")},
        "steps": result.get("steps"),
        "evidence": result.get("verification"),
    }


def workspace(tmp_path: Path, door: str) -> Path:
    path = tmp_path / door
    path.mkdir()
    (path / "README").write_text("no notes here\n")
    return path


def terminal(tmp_path: Path, *output: str) -> tuple[Any, dict[str, Any]]:
    """``localhand plan --goal`` in a child process: what it printed, and its Result (the
    ``--json`` line, the ``--jsonl`` stream's last line, or the store's record)."""
    args = ["plan", "--goal", GOAL, "--yes", "--mode", "agentic", "--model", "qwen3:8b"]
    with FakeOllama(SCRIPT, models=MODEL) as server:
        done = localhand(*args, "-w", str(workspace(tmp_path, "cli" + "".join(output))), *output,
                         host=server.url, timeout=120)  # fmt: skip
    assert done.returncode == 1, done.stderr
    if "--json" in output:
        return done, json.loads(done.stdout.splitlines()[-1])
    if "--jsonl" in output:
        lines = [json.loads(line) for line in done.stdout.splitlines()]
        [announced] = [r["payload"]["result"] for r in lines if r["type"] == "task_finished"]
        assert lines[-1]["type"] == "result" and lines[-1]["payload"] == announced
        return done, announced
    return done, open_store(os.environ["LOCALHAND_DB"]).runs()[0].result


def dashboard(tmp_path: Path) -> dict[str, Any]:
    """The plan started through the dashboard's HTTP API, as its page starts one: its Result
    as the API gives it, which must be the one its ``task_finished`` event carries."""
    store = Store(tmp_path / "dashboard.db")
    body = {"description": GOAL, "workspace": str(workspace(tmp_path, "dash")), "mode": "agentic"}
    with served_dashboard(store, SCRIPT, [tmp_path]) as (server, _), client(server) as api:
        started = api.post("api/runs", json=body)
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        finished(store, run_id)
        shown = api.get(f"api/runs/{run_id}").json()
    [ended] = [e for e in shown["events"] if e["type"] == "task_finished"]
    assert ended["result"] == shown["run"]["result"]
    return dict(shown["run"]["result"])


def mcp(tmp_path: Path) -> dict[str, Any]:
    """The ``plan`` tool of ``localhand mcp``, called by the MCP SDK's client over stdio."""
    ws = workspace(tmp_path, "mcp")

    async def call(url: str) -> Any:
        env = {**os.environ, "OLLAMA_HOST": url, "NO_COLOR": "1"}
        args = ["-m", "localhand", "mcp", "--model", "qwen3:8b", "--root", str(tmp_path)]
        params = StdioServerParameters(command=sys.executable, args=args, env=env)
        async with Client(stdio_client(params)) as session:
            arguments = {"goal": GOAL, "workspace": str(ws), "mode": "agentic"}
            return await session.call_tool("plan", arguments)

    with FakeOllama(SCRIPT, models=MODEL) as server:
        answered = anyio.run(call, server.url)
    assert not answered.is_error, answered.content
    assert json.loads(answered.content[0].text) == answered.structured_content
    return dict(answered.structured_content)


def editor(tmp_path: Path) -> tuple[Editor, Any, dict[str, Any]]:
    """The goal as a prompt in the editor's Plan mode, over ACP: what the editor was sent, its
    answer, and the run's Result as recorded."""

    async def conversation(conn: Any, session_id: str) -> Any:
        await conn.set_session_mode(session_id=session_id, mode_id="plan")
        return await prompt(GOAL)(conn, session_id)

    seen = Editor()
    with FakeOllama(SCRIPT, models=MODEL) as server:
        _, answer = talk(seen, workspace(tmp_path, "acp"), conversation, host=server.url)
    [run] = [r for r in open_store(os.environ["LOCALHAND_DB"]).runs() if "/acp" in r.workspace]
    return seen, answer, dict(run.result or {})


def test_a_failing_plan_ends_the_same_through_every_door(tmp_path: Path) -> None:
    plain, recorded = terminal(tmp_path)
    _, as_json = terminal(tmp_path, "--json")
    _, as_jsonl = terminal(tmp_path, "--jsonl")
    the_editor, answer, in_editor = editor(tmp_path)
    results = {
        "terminal (store)": recorded,
        "--json": as_json,
        "--jsonl": as_jsonl,
        "dashboard": dashboard(tmp_path),
        "mcp": mcp(tmp_path),
        "editor (store)": in_editor,
    }
    expected = truth(as_json)
    for door, result in results.items():
        assert truth(result) == expected, f"{door} tells another story"

    # the story itself: a failed plan, repaired once by the model, then aborted with its reason
    assert (expected["status"], expected["termination_reason"]) == ("fail", "aborted")
    assert expected["mode"] == "agentic" and expected["corrections_used"] == 2
    ready, notes = expected["steps"]
    assert (ready["status"], notes["status"]) == ("done", "failed")
    assert (notes["command"], notes["modified"], notes["attempts"]) == ("cat notes.md", True, 2)
    assert notes["error"] == "failed with exit code 1"
    assert ABORTED in expected["output"]

    # the terminal says it in its words: the closing line, why the plan stopped, the output
    assert plain.stdout.strip() == expected["output"]
    assert "■ fail (aborted)" in plain.stderr
    assert f"■ plan stopped {STOPPED}" in plain.stderr
    assert plain.stderr.count("✗ failed (exit code 1") == 2

    # the editor in its own: the failed step is not "completed" and says why, each try of it
    # is a failed tool call, and the editor is told why the plan stopped and how it ended
    assert answer.stop_reason == "end_turn"
    last = the_editor.of("plan")[-1].entries
    assert [e.status for e in last] == ["completed", "pending"]
    assert last[1].content == "Show the notes (failed: exit code 1)"
    tries = [u for u in the_editor.of("tool_call_update") if u.status == "failed"]
    assert len(tries) == 2 and all("No such file" in u.content[0].content.text for u in tries)
    said = the_editor.text()
    assert f"The plan stopped {STOPPED}" in said
    assert "■ fail (aborted) · 1/2 steps done" in said


RUN_SCRIPT: list[Any] = [
    {"content": "", "tool_calls": [{"function": {"name": "run_command", "arguments": {
        "command": "cat notes.txt"}}}]},
    "There are no notes to show.",
    *["(nothing more to say)"] * 3,
]  # fmt: skip
CHECK = "test -f notes.txt"


def run_truth(result: dict[str, Any]) -> dict[str, Any]:
    """What every door must agree on for a run: how it ended, why, what it changed, and the
    evidence (the verification entries whole)."""
    keys = ("status", "termination_reason", "error", "output", "iterations_used", "model_used")
    return {
        **{key: result.get(key) for key in (*keys, "files_modified")},
        "evidence": result.get("verification"),
    }


def test_a_run_that_fails_its_check_ends_the_same_through_every_door(tmp_path: Path) -> None:
    results: dict[str, dict[str, Any]] = {}
    task = "Show the notes"
    for output in ("--json", "--jsonl"):
        args = ["run", task, "--agentic", "--model", "qwen3:8b", "--verify", CHECK, output]
        with FakeOllama(RUN_SCRIPT, models=MODEL) as server:
            ws = workspace(tmp_path, "cli" + output)
            done = localhand(*args, "-w", str(ws), host=server.url, timeout=120)
        assert done.returncode == 1, done.stderr
        last = json.loads(done.stdout.splitlines()[-1])
        results[output] = last["payload"] if output == "--jsonl" else last
    results["terminal (store)"] = dict(open_store(os.environ["LOCALHAND_DB"]).runs()[0].result)

    store = Store(tmp_path / "dashboard.db")
    body = {"description": task, "workspace": str(workspace(tmp_path, "dash")), "agentic": True}
    with served_dashboard(store, RUN_SCRIPT, [tmp_path]) as (server, _), client(server) as api:
        run_id = api.post("api/runs", json={**body, "verify": [CHECK]}).json()["run_id"]
        finished(store, run_id)
        results["dashboard"] = api.get(f"api/runs/{run_id}").json()["run"]["result"]

    async def call(url: str) -> Any:
        env = {**os.environ, "OLLAMA_HOST": url, "NO_COLOR": "1"}
        args = ["-m", "localhand", "mcp", "--model", "qwen3:8b", "--root", str(tmp_path)]
        params = StdioServerParameters(command=sys.executable, args=args, env=env)
        async with Client(stdio_client(params)) as session:
            ws = str(workspace(tmp_path, "mcp"))
            arguments = {"task": task, "workspace": ws, "verify": [CHECK]}
            return await session.call_tool("run_task", arguments)

    with FakeOllama(RUN_SCRIPT, models=MODEL) as server:
        results["mcp"] = dict(anyio.run(call, server.url).structured_content)

    expected = run_truth(results["--json"])
    for door, result in results.items():
        assert run_truth(result) == expected, f"{door} tells another story"
    assert (expected["status"], expected["termination_reason"]) == ("fail", "final_answer")
    [check] = expected["evidence"]
    assert (check["name"], check["passed"]) == (CHECK, False)


def test_a_plan_whose_draft_fails_says_why_once_and_keeps_it(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "undrafted")
    args = ["plan", "--goal", GOAL, "--yes", "--model", "qwen3:8b", "-w", str(ws)]
    with FakeOllama(["no plan", "still no plan"], models=MODEL) as server:
        done = localhand(*args, host=server.url, timeout=120)
    why = "the model did not draft a usable plan"
    assert done.returncode == 2
    assert done.stderr.count(why) == 1, done.stderr  # said once, under the closing line
    assert "■ error (error)" in done.stderr and "steps done" not in done.stderr
    shown = localhand("show", "last")
    assert why in shown.stdout and "without a result" not in shown.stdout, shown.stdout
