"""MCP ``run_task``'s ``continue_from``, through the SDK's own client over stdio."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

import optional_deps

optional_deps.module("mcp", "the MCP SDK", "pip install -e '.[mcp]' (or '.[dev]')")

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters, stdio_client  # noqa: E402

from localhand.testing import FakeOllama  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def test_run_task_continues_a_run_in_its_workspace(tmp_path: Path) -> None:
    workspace, other = tmp_path / "ws", tmp_path / "other"
    workspace.mkdir()
    other.mkdir()
    write = {"function": {"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}}
    script = [{"content": "", "tool_calls": [write]}, "Wrote a.txt.", *["Nothing more."] * 4]

    async def check(url: str) -> list[Any]:
        env = {**os.environ, "OLLAMA_HOST": url, "NO_COLOR": "1"}
        args = ["-m", "localhand", "mcp", "--model", "qwen3:8b", "--root", str(tmp_path)]
        params = StdioServerParameters(command=sys.executable, args=args, env=env)
        async with Client(stdio_client(params)) as client:
            first = await client.call_tool(
                "run_task", {"task": "Write a.txt", "workspace": str(workspace)}
            )
            elsewhere = await client.call_tool(
                "run_task",
                {"task": "More", "workspace": str(other), "continue_from": "last"},
            )
            second = await client.call_tool(
                "run_task",
                {"task": "Anything else?", "workspace": str(workspace), "continue_from": "last"},
            )
            shown = await client.call_tool("show_run", {"run": "last"})
        return [first, elsewhere, second, shown]

    with FakeOllama(script=script, models={"qwen3:8b": {}}) as fake:
        first, elsewhere, second, shown = anyio.run(check, fake.url)
        requests = fake.chat_requests
    assert not first.is_error and not second.is_error, second.content
    assert elsewhere.is_error and "pass its workspace" in elsewhere.content[0].text
    earlier, continued = requests[1].body["messages"], requests[2].body["messages"]
    assert continued[: len(earlier)] == earlier, "the earlier conversation, unchanged"
    assert continued[len(earlier)] == {"role": "assistant", "content": "Wrote a.txt."}
    assert continued[len(earlier) + 1 :] == [{"role": "user", "content": "Anything else?"}]
    run = shown.structured_content["run"]
    assert run["continues"] and run["task_id"] == second.structured_content["task_id"]
