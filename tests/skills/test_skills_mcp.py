"""Skills on another door: ``localhand mcp``'s ``run_task`` (through the SDK's stdio client)
offers a trusted workspace skill and loads it on demand, as ``localhand run`` does, since both
go through the one session."""

from __future__ import annotations

from pathlib import Path

import pytest

import optional_deps

optional_deps.module("mcp", "the MCP SDK", "pip install -e '.[mcp]' (or --group dev)")

import anyio  # noqa: E402

from localhand.testing import FakeOllama  # noqa: E402
from mcp_helpers import localhand_mcp  # noqa: E402
from trust_helpers import pin  # noqa: E402

pytestmark = pytest.mark.timeout(120)

SKILL = "---\nname: release\ndescription: How to cut a release.\n---\nTag it vX.Y.Z.\n"
READ = {"function": {"name": "read_skill", "arguments": {"name": "release"}}}


def test_run_task_over_mcp_loads_a_skill_on_demand(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".agents/skills/release").mkdir(parents=True)
    (ws / ".agents/skills/release/SKILL.md").write_text(SKILL)
    pin(ws / ".agents/skills/release/SKILL.md")
    script = [{"content": "", "tool_calls": [READ]}, "Tag it v1.2.0."]

    async def go() -> None:
        async with localhand_mcp("--root", str(tmp_path), host=fake.url) as client:
            task = {"task": "Tag a release of this project.", "workspace": str(ws)}
            answer = await client.call_tool("run_task", task)
            assert not answer.is_error, answer.content

    with FakeOllama(script=script, models={"qwen3:8b": {}}) as fake:
        anyio.run(go)
        first, second = (r.body for r in fake.requests if r.path == "/api/chat")
    assert "- release: How to cut a release." in first["messages"][1]["content"]
    assert (
        "Tag it vX.Y.Z." not in str(first) and "Tag it vX.Y.Z." in second["messages"][-1]["content"]
    )
