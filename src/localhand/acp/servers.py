"""The editor's MCP servers (``session/new``'s ``mcpServers``) as localhand's, started by
localhand's own MCP client for each run like a ``--mcp-config`` server: stdio and Streamable
HTTP (the transports ``initialize`` declares); their calls need approval as any server's do
(``trust = "ask"``), so what the editor adds cannot loosen the approval policy."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from localhand.mcp.config import McpServer

SOURCE = "the editor (ACP session/new)"


def editor_servers(given: Iterable[Any] | None) -> tuple[tuple[McpServer, ...], list[str]]:
    """The servers localhand can start, and a note for each one it cannot (SSE, ACP)."""
    servers: list[McpServer] = []
    skipped: list[str] = []
    for server in given or ():
        name = str(getattr(server, "name", "") or "editor")
        command = getattr(server, "command", None)
        url = getattr(server, "url", None)
        kind = getattr(server, "type", None)
        if command:
            env = tuple((v.name, v.value) for v in getattr(server, "env", None) or ())
            servers.append(
                McpServer(
                    name, command=command, args=tuple(server.args or ()), env=env, source=SOURCE
                )
            )
        elif url and kind == "http":
            headers = tuple((h.name, h.value) for h in getattr(server, "headers", None) or ())
            servers.append(McpServer(name, url=url, headers=headers, source=SOURCE))
        else:
            skipped.append(f"MCP server {name!r} ({kind or 'unknown transport'}) is not supported")
    return tuple(servers), skipped
