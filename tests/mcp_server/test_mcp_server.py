"""``localhand mcp``, driven by the SDK's own client over stdio (and HTTP): the tools it lists,
``run_task`` against the fake Ollama with a progress notification per iteration, a cancelled
run, the roots a workspace must be under, a plan, and the bearer token in front of HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import optional_deps

optional_deps.module("mcp", "the MCP SDK", "pip install -e '.[mcp]' (or --group dev)")

import anyio  # noqa: E402
import httpx2  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.types import ListRootsResult, Root  # noqa: E402

from localhand.errors import ConfigError  # noqa: E402
from localhand.mcp.client import McpClients  # noqa: E402
from localhand.mcp.config import load_mcp_json  # noqa: E402
from localhand.testing import FakeOllama  # noqa: E402
from mcp_helpers import localhand_mcp  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


def run(coroutine: Any, *args: Any) -> Any:
    return anyio.run(coroutine, *args)


def test_it_lists_its_tools_with_schemas_a_client_can_fill(tmp_path: Path) -> None:
    async def check() -> None:
        async with localhand_mcp("--root", str(tmp_path)) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"run_task", "plan", "list_runs", "show_run"}
        schema = tools["run_task"].input_schema
        assert schema["required"] == ["task", "workspace"]
        assert {"model", "backend", "host", "max_iterations", "timeout", "verify"} <= set(
            schema["properties"]
        )
        assert "roots" not in schema["properties"] and "ctx" not in schema["properties"]
        assert tools["run_task"].description

    run(check)


def test_run_task_returns_the_result_and_reports_each_iteration(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [
        tool_call("list_directory", path="."),
        tool_call("write_file", path="hello.txt", content="hello\n"),
        "Wrote hello.txt.",
    ]

    async def check(url: str) -> None:
        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, total, message))

        async with localhand_mcp("--root", str(tmp_path), host=url) as client:
            arguments = {
                "task": "Write hello.txt saying hello",
                "workspace": str(workspace),
                "verify": ["grep -q hello hello.txt"],
                "max_iterations": 5,
            }
            answer = await client.call_tool("run_task", arguments, progress_callback=on_progress)
            runs = (await client.call_tool("list_runs", {"limit": 5})).structured_content
            shown = await client.call_tool("show_run", {"run": "last", "events": 200})
        assert not answer.is_error, answer.content
        result = answer.structured_content
        assert json.loads(answer.content[0].text) == result  # JSON text and structured: the same
        assert result["status"] == "pass" and result["files_modified"] == ["hello.txt"]
        assert result["verification"][0]["passed"] is True
        assert [(value, total) for value, total, _ in progress] == [(1, 5), (2, 5), (3, 5)]
        assert progress[2][2] == "iteration 3 of 5; last call: write_file (ok)"
        assert runs["runs"][0]["task_id"] == result["task_id"]
        assert runs["runs"][0]["description"] == "Write hello.txt saying hello"
        timeline = shown.structured_content
        assert timeline["run"]["result"]["status"] == "pass"
        assert [e["tool_name"] for e in timeline["events"] if e["type"] == "tool_call"] == [
            "list_directory",
            "write_file",
        ]

    with FakeOllama(script=script, models={"qwen3:8b": {}}) as fake:
        run(check, fake.url)
    assert (workspace / "hello.txt").read_text() == "hello\n"


def test_a_cancelled_call_ends_the_run_as_cancelled(tmp_path: Path) -> None:
    script = [tool_call("list_directory", path=f"dir{i}") for i in range(8)] + ["Listed."]

    async def check(url: str) -> None:
        async with localhand_mcp("--root", str(tmp_path), host=url) as client:
            first = anyio.Event()

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                first.set()

            async def ask() -> None:
                await client.call_tool(
                    "run_task",
                    {"task": "List the files, again and again", "workspace": str(tmp_path)},
                    progress_callback=on_progress,
                )

            started = time.monotonic()
            async with anyio.create_task_group() as group:
                group.start_soon(ask)
                await first.wait()
                group.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            run = None
            while time.monotonic() - started < 30:
                runs = (await client.call_tool("list_runs", {"limit": 1})).structured_content
                run = runs["runs"][0] if runs["runs"] else None
                if run is not None and run["status"] != "running":
                    break
                await anyio.sleep(0.2)
        assert run is not None and run["termination_reason"] == "cancelled", run
        assert run["iterations"] < 8
        assert time.monotonic() - started < 15

    # A second a reply: the run is still going when the cancellation arrives.
    with FakeOllama(script=script, models={"qwen3:8b": {}}, latency=1.0) as fake:
        run(check, fake.url)


def test_a_workspace_must_be_under_a_root(tmp_path: Path) -> None:
    allowed, other = tmp_path / "allowed", tmp_path / "other"
    allowed.mkdir()
    other.mkdir()
    (allowed / "link").symlink_to(other)
    script = [tool_call("list_directory", path="."), "Nothing here."]

    async def roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=other.as_uri(), name="other")])

    async def check(url: str) -> None:
        async with localhand_mcp("--root", str(allowed), host=url) as client:
            for workspace in (other, allowed / "link", "relative/path"):
                refused = await client.call_tool(
                    "run_task", {"task": "List the files", "workspace": str(workspace)}
                )
                assert refused.is_error, workspace
                text = refused.content[0].text
                assert "outside the roots" in text or "absolute path" in text
        # A root the client declares (MCP roots) lets the same workspace in.
        async with localhand_mcp(
            "--root", str(allowed), host=url, list_roots_callback=roots
        ) as client:
            answer = await client.call_tool(
                "run_task", {"task": "List the files", "workspace": str(other)}
            )
        assert not answer.is_error, answer.content
        assert answer.structured_content["termination_reason"] == "final_answer"

    with FakeOllama(script=script, models={"qwen3:8b": {}}) as fake:
        run(check, fake.url)


def test_plan_runs_a_plan_file_step_by_step(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(
        "goal: make a build directory\n"
        "steps:\n"
        "  - {id: mk, description: make it, command: mkdir -p build}\n"
        "  - {id: mark, description: mark it, command: touch build/done}\n"
    )

    async def check() -> None:
        progress: list[str | None] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(message)

        async with localhand_mcp("--root", str(tmp_path)) as client:
            answer = await client.call_tool(
                "plan",
                {"workspace": str(tmp_path), "plan_file": "plan.yaml", "mode": "planner"},
                progress_callback=on_progress,
            )
            outside = await client.call_tool(
                "plan", {"workspace": str(tmp_path), "plan_file": "/etc/passwd"}
            )
        assert not answer.is_error, answer.content
        assert answer.structured_content["status"] == "pass", answer.structured_content
        assert progress == ["step mk: mkdir -p build", "step mark: touch build/done"]
        assert outside.is_error and "outside the roots" in outside.content[0].text

    run(check)
    assert (tmp_path / "build" / "done").exists()


def test_http_serves_only_with_the_token(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = "test-token-for-localhand-mcp"
    env = {**os.environ, "LOCALHAND_MCP_TOKEN": token, "NO_COLOR": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "localhand", "mcp", "--http", str(port), "--root", str(tmp_path)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        _wait_for_port(port, server)

        async def connect(headers: dict[str, str]) -> list[str]:
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                return [tool.name for tool in (await client.list_tools()).tools]

        assert "run_task" in run(connect, {"Authorization": f"Bearer {token}"})
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            with pytest.raises(ExceptionGroup):  # the SDK's MCPError for the 401, in groups
                run(connect, headers)
        plain = httpx2.post(url, json={}, headers={"Authorization": "Bearer nope"})
        assert plain.status_code == 401
        # localhand's own client, over Streamable HTTP, with the token from the environment.
        config = tmp_path / "mcp.json"
        config.write_text(
            json.dumps(
                {"mcpServers": {"lh": {"url": url, "headers": {"Authorization": "Bearer ${T}"}}}}
            )
        )
        (served,) = load_mcp_json(config, env={"T": token})
        with McpClients([served], warn=print) as clients:
            assert {tool.name for _, tool in clients.tools()} >= {"run_task", "list_runs"}
            listed = clients.call("lh", "list_runs", {"limit": 1}, 10)
        assert not listed.is_error and "runs" in listed.structured_content
        (wrong,) = load_mcp_json(config, env={"T": "wrong"})
        with pytest.raises(ConfigError, match=r"the MCP server 'lh'.*could not start"):
            McpClients([wrong], warn=print).start()
    finally:
        server.terminate()
        server.wait(timeout=10)
    said = server.stderr.read() if server.stderr else ""
    assert f"http://127.0.0.1:{port}/mcp" in said and "LOCALHAND_MCP_TOKEN" in said
    assert token not in said  # a token the user chose is not printed


def _wait_for_port(port: int, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"localhand mcp --http exited: {server.stderr.read()}")  # type: ignore[union-attr]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("localhand mcp --http did not start listening")
