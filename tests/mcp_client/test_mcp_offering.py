"""MCP tools past a tenth of the window wait behind find_tools: the requests' tool schemas stay
within the share, the list never changes during a run (the cached prefix), and a tool found
is called by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from localhand import Agent
from localhand.mcp.offering import DEFAULT_WINDOW, TOOL_SHARE, OfferedRegistry, offer_within
from localhand.models.scripted import ScriptedModel, call
from localhand.models.tokens import estimate_text_tokens
from localhand.tools import Tool, ToolRegistry, default_tools
from localhand.types import ToolCall

TOPICS = ["issue", "calendar", "invoice", "weather", "ticket", "deploy", "metric", "email"]


def _runner(name: str) -> Any:
    def run(target: str) -> str:
        return f"{name} done on {target}"

    return run


def mcp_tools(count: int) -> list[Tool]:
    tools = []
    for n in range(count):
        topic = TOPICS[n % len(TOPICS)]
        name = f"{topic}_action_{n}"

        tools.append(
            Tool(
                name=name,
                description=f"Perform action {n} on a {topic}: creates, lists or updates it.",
                parameters={
                    "type": "object",
                    "properties": {"target": {"type": "string", "description": "What to act on"}},
                    "required": ["target"],
                },
                function=_runner(name),
            )
        )
    return tools


def schema_tokens(definitions: list[dict[str, Any]]) -> int:
    return sum(estimate_text_tokens(json.dumps(d)) for d in definitions)


def test_a_few_mcp_tools_are_all_offered(tmp_path: Path) -> None:
    builtin = default_tools(tmp_path)
    offered = offer_within(builtin, mcp_tools(3), window=32768)
    assert not isinstance(offered, OfferedRegistry)
    assert len(offered.definitions()) == len(builtin) + 3


def test_sixty_mcp_tools_stay_within_a_tenth_of_the_window(tmp_path: Path) -> None:
    builtin = default_tools(tmp_path)
    window = 16384
    offered = offer_within(builtin, mcp_tools(60), window=window)
    names = [d["function"]["name"] for d in offered.definitions()]
    assert "find_tools" in names
    mcp_offered = [d for d in offered.definitions() if d["function"]["name"] not in builtin]
    assert schema_tokens(mcp_offered) <= window * TOOL_SHARE
    assert len(offered) == len(builtin) + 60 + 1  # every tool still callable by name
    small = offer_within(builtin, mcp_tools(60), window=None)  # unknown: a small window
    small_mcp = [d for d in small.definitions() if d["function"]["name"] not in builtin]
    assert schema_tokens(small_mcp) <= DEFAULT_WINDOW * TOOL_SHARE


def test_find_tools_returns_schemas_and_the_tool_is_callable(tmp_path: Path) -> None:
    offered = offer_within(ToolRegistry(), mcp_tools(60), window=4096)
    found = offered.execute(ToolCall("find_tools", {"query": "weather"}))
    assert found.ok and "weather_action_59" not in found.content  # 5 matches at most
    assert "weather_action_3:" in found.content and '"target"' in found.content
    assert offered.execute(ToolCall("weather_action_3", {"target": "Oslo"})).content == (
        "weather_action_3 done on Oslo"
    )
    nothing = offered.execute(ToolCall("find_tools", {"query": "zebra"}))
    assert "No tool matches" in nothing.content and "weather_action_3," in nothing.content
    assert nothing.content.endswith("(+17 more).")  # 57 held back, 40 named


def test_a_run_finds_and_calls_a_held_tool_with_the_tool_list_unchanged(tmp_path: Path) -> None:
    tools = offer_within(default_tools(tmp_path), mcp_tools(60), window=4096)
    model = ScriptedModel(
        [
            call("find_tools", query="invoice"),
            call("invoice_action_58", target="march"),
            "Updated the March invoice.",
        ]
    )
    result = Agent(model, tmp_path, tools=tools).run("Update the March invoice")
    assert result.status != "error", result.error
    lists = [recorded.tools for recorded in model.calls]
    assert lists[0] == lists[1] == lists[2]  # the prefix the server cached stays the same
    last = model.calls[2].messages
    assert any("invoice_action_58 done on march" in str(m.get("content")) for m in last)
