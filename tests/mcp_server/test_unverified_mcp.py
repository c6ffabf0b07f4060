"""``localhand mcp``'s ``run_task`` tells a client the truth about evidence: with no verify
command the Result is ``unverified`` (with the command that would check it), and ``auto``
runs the command the project is tested with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import optional_deps

optional_deps.module("mcp", "the MCP SDK", "pip install -e '.[mcp]' (or --group dev)")

import anyio  # noqa: E402

from localhand.testing import FakeOllama  # noqa: E402
from mcp_helpers import localhand_mcp  # noqa: E402
from workspaces import BUGGY, CHECK, workspace_with  # noqa: E402

pytestmark = pytest.mark.timeout(120)

FIX = [
    {
        "content": "",
        "tool_calls": [
            {
                "function": {
                    "name": "edit_file",
                    "arguments": {
                        "path": "calc.py",
                        "old_text": "return a - b",
                        "new_text": "return a + b",
                    },
                }
            }
        ],
    },
    "Fixed add().",
]


def call_run_task(url: str, root: Path, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """``run_task`` then ``list_runs``, through the SDK's stdio client as Claude Code calls."""
    found: list[dict[str, Any]] = []

    async def go() -> None:
        async with localhand_mcp("--root", str(root), host=url) as client:
            answer = await client.call_tool("run_task", arguments)
            assert not answer.is_error, answer.content
            runs = await client.call_tool("list_runs", {"limit": 1})
        found.extend([answer.structured_content or {}, runs.structured_content or {}])

    anyio.run(go)
    return found


def fix_the_demo(tmp_path: Path, **arguments: Any) -> list[dict[str, Any]]:
    """``call_run_task`` of the demo task (fix ``add`` so ``check_calc.py`` passes) in a fresh
    workspace, with ``arguments`` besides, on a model that fixes it."""
    workspace = workspace_with(tmp_path / "ws", {"calc.py": BUGGY, "check_calc.py": CHECK})
    task = {"task": "Fix add() so check_calc.py passes", "workspace": str(workspace)}
    with FakeOllama(script=FIX, models={"qwen3:8b": {}}) as fake:
        return call_run_task(fake.url, tmp_path, {**task, **arguments})


def test_run_task_without_verify_is_unverified_and_names_the_check(tmp_path: Path) -> None:
    result, runs = fix_the_demo(tmp_path)
    assert result["status"] == "unverified" and result["termination_reason"] == "final_answer"
    assert result["suggested_check"] == "python3 check_calc.py"
    assert runs["runs"][0]["status"] == "unverified"


def test_run_task_with_verify_auto_passes_on_the_detected_check(tmp_path: Path) -> None:
    result, _ = fix_the_demo(tmp_path, verify=["auto"])
    assert result["status"] == "pass"
    assert [c["name"] for c in result["verification"]] == ["python3 check_calc.py"]
