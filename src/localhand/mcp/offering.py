"""MCP tools within a tenth of the window; the rest behind ``find_tools``.

Every tool schema offered is paid in every request's prompt, and 60 MCP tools can fill a
small model's window before the task is read. So MCP tools are offered, in their servers'
order, until their schemas would pass ``TOOL_SHARE`` of the context window; the others are
held back and one more tool, ``find_tools``, searches them by name and description. Its
result gives each match's name, arguments and description, and the match can be called by
name from then on. The offered list itself never changes during the run: a tool list that
changed would change the prompt's prefix (templates render tools first) and throw away the
server's cache; a ``find_tools`` result is appended like any other, so the prefix stays.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from localhand.models.tokens import estimate_text_tokens
from localhand.tools import Tool, ToolRegistry

TOOL_SHARE = 0.1
"""The share of the context window MCP tools' schemas may take in every request."""
DEFAULT_WINDOW = 8192
"""The window assumed when it is not known before the first request: a small model's."""
MATCHES = 5
_WORD = re.compile(r"[a-z0-9]+")


class ToolFinder:
    """``find_tools`` over the tools held back (its own object: the registry closes the
    owners of its tools' methods, and must not find itself among them)."""

    def __init__(self, held: Sequence[Tool]) -> None:
        self.held = list(held)

    def find_tools(self, query: str) -> str:
        """Search more tools (from MCP servers) by what they do; they can then be called.

        Args:
            query: Words for what the tool should do, e.g. "create issue".
        """
        wanted = set(_WORD.findall(query.lower()))
        scored = []
        for index, tool in enumerate(self.held):
            about = f"{tool.name} {tool.name.replace('_', ' ')} {tool.description}".lower()
            hits = len(wanted & set(_WORD.findall(about)))
            if hits:
                scored.append((-hits, index, tool))
        if not scored:
            names = ", ".join(tool.name for tool in self.held[:40])
            more = f" (+{len(self.held) - 40} more)" if len(self.held) > 40 else ""
            return f"No tool matches {query!r}. The tools held back: {names}{more}."
        lines = [f"Tools matching {query!r}; call them by name like any other tool:"]
        for _hits, _index, tool in sorted(scored, key=lambda item: item[:2])[:MATCHES]:
            args = json.dumps(tool.parameters.get("properties", {}), ensure_ascii=False)
            lines.append(f"- {tool.name}: {tool.description}\n  arguments: {args}")
        return "\n".join(lines)


class OfferedRegistry(ToolRegistry):
    """Every tool callable by name; only ``offered`` ones (plus ``find_tools``) in the
    request's ``tools``."""

    def __init__(self, tools: Sequence[Tool], held: Sequence[Tool]) -> None:
        finder = Tool.from_function(ToolFinder(held).find_tools)
        super().__init__([*tools, finder, *held])
        self._offered = [*(tool.name for tool in tools), finder.name]

    def definitions(self) -> list[dict[str, Any]]:
        return [tool.definition() for tool in map(self.get, self._offered) if tool is not None]


def offer_within(
    registry: ToolRegistry, mcp_tools: Sequence[Tool], window: int | None = None
) -> ToolRegistry:
    """``registry`` plus ``mcp_tools``: all offered when their schemas fit ``TOOL_SHARE`` of
    ``window`` (``DEFAULT_WINDOW`` when unknown), else those that fit and ``find_tools``."""
    budget = int((window or DEFAULT_WINDOW) * TOOL_SHARE)
    costs = [estimate_text_tokens(json.dumps(tool.definition())) for tool in mcp_tools]
    if sum(costs) <= budget:
        return ToolRegistry([*registry, *mcp_tools])
    finder_cost = 80  # find_tools' own schema, about
    offered, spent = [], finder_cost
    for tool, cost in zip(mcp_tools, costs, strict=True):
        if spent + cost > budget:
            break
        offered.append(tool)
        spent += cost
    held = list(mcp_tools[len(offered) :])
    return OfferedRegistry([*registry, *offered], held)
