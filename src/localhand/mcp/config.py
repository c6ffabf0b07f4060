"""Which MCP servers a run starts: ``mcpServers`` JSON files and ``[mcp.servers.NAME]`` tables.

The JSON is the format Claude Desktop, Cursor and Goose users already have::

    {"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"]},
        "docs": {"url": "http://127.0.0.1:9000/mcp",
                 "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
    }}

with localhand's own keys beside the others: ``tools`` (only these), ``exclude`` (not these),
``trust`` (``"allow"``, or a list of tool names, to call without asking), ``timeout``
(seconds a call may take, default 60) and ``startup_timeout`` (default 30). Keys that other
clients add (``alwaysAllow``, ``autoApprove``...) are ignored there, never read as trust; in
``localhand.toml`` an unknown key is an error. ``${VAR}`` and ``${VAR:-default}`` are read from
the environment when the file is loaded, which is before localhand forgets its secrets: a
server gets a secret only when its ``env`` or ``headers`` name it.

Plain data only: nothing here imports the MCP SDK.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from localhand.errors import ConfigError, positive_seconds

Trust = Literal["ask", "allow"]
DEFAULT_CALL_TIMEOUT_S = 60.0
DEFAULT_STARTUP_TIMEOUT_S = 30.0
_KEYS = frozenset(
    "command args env cwd url headers type tools exclude trust timeout startup_timeout "
    "disabled".split()
)
_TRANSPORTS = frozenset(("stdio", "http", "streamable-http", "streamableHttp"))
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True, slots=True)
class McpServer:
    """One MCP server to start for a run (stdio: ``command``; Streamable HTTP: ``url``)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    """Given to the server on top of the scrubbed environment commands get: the only way a
    secret reaches it."""
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    tools: tuple[str, ...] | None = None
    """Offer only these tools (their MCP names); None offers all."""
    exclude: tuple[str, ...] = ()
    trust: Trust = "ask"
    """``allow``: its calls need no approval under ``--approve dangerous``."""
    trusted_tools: tuple[str, ...] = ()
    """Tools whose calls need no approval under ``--approve dangerous`` (``trust = [...]``)."""
    timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    source: str = ""
    """The file it was configured in, for messages (and for ``config.distrusting``)."""

    def trusted(self, tool: str) -> bool:
        """Whether calls of ``tool`` (its MCP name) go without asking under ``dangerous``."""
        return self.trust == "allow" or tool in self.trusted_tools

    def offers(self, tool: str) -> bool:
        """Whether ``tool`` (its MCP name) passes ``tools`` and ``exclude``."""
        return (self.tools is None or tool in self.tools) and tool not in self.exclude

    def describe(self) -> str:
        """``'time' (uvx mcp-server-time)``: how messages name it."""
        from localhand.safety.secrets.scrub import scrub_text  # a token in a URL or an argument

        what = self.url if self.url else " ".join((self.command or "", *self.args))
        return f"'{self.name}' ({scrub_text(what)})"


def load_mcp_json(
    path: Path, env: Mapping[str, str] | None = None, text: str | None = None
) -> tuple[McpServer, ...]:
    """The servers of an ``mcpServers`` JSON file (``--mcp-config FILE``); ``text``: its
    content as already read (and trusted, ``localhand.safety.trust.store``)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8") if text is None else text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"cannot read the MCP configuration {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f'{path} must hold a JSON object: {{"mcpServers": {{"NAME": {{...}}}}}}')
    servers = data.get("mcpServers", data.get("servers"))  # VS Code writes "servers"
    if not isinstance(servers, dict):
        raise ConfigError(
            f'{path} has no "mcpServers" object: write {{"mcpServers": {{"NAME": '
            '{"command": "...", "args": [...]}}}'
        )
    return _servers(servers, str(path), strict=False, env=env)


def servers_from_toml(table: Any, path: Path) -> tuple[McpServer, ...]:
    """The servers of ``localhand.toml``'s ``[mcp]`` table (``[mcp.servers.NAME]``)."""
    if not isinstance(table, dict) or set(table) - {"servers"}:
        raise ConfigError(f"[mcp] in {path} takes only [mcp.servers.NAME] tables")
    servers = table.get("servers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"[mcp.servers] in {path} must hold tables: [mcp.servers.NAME]")
    return _servers(servers, str(path), strict=True, env=None)


def merge(*groups: tuple[McpServer, ...]) -> tuple[McpServer, ...]:
    """Servers of several sources in order; a name given again replaces the earlier one
    (``--mcp-config`` files after ``localhand.toml``, each file after the one before)."""
    by_name: dict[str, McpServer] = {}
    for group in groups:
        for server in group:
            by_name.pop(server.name, None)
            by_name[server.name] = server
    return tuple(by_name.values())


def _servers(
    entries: dict[str, Any], source: str, *, strict: bool, env: Mapping[str, str] | None
) -> tuple[McpServer, ...]:
    variables = os.environ if env is None else env
    found = []
    for name, entry in entries.items():
        where = f"MCP server '{name}' in {source}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} must be an object with command (or url)")
        if entry.get("disabled") is True:
            continue
        if strict and set(entry) - _KEYS:
            unknown = ", ".join(sorted(set(entry) - _KEYS))
            allowed = ", ".join(sorted(_KEYS))
            raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {allowed}")
        found.append(_server(str(name), entry, where, source, variables))
    return tuple(found)


def _server(
    name: str, entry: dict[str, Any], where: str, source: str, env: Mapping[str, str]
) -> McpServer:
    if not name.strip():
        raise ConfigError(f"an MCP server in {source} has an empty name")
    kind = entry.get("type")
    if kind is not None and kind not in _TRANSPORTS:
        raise ConfigError(
            f"{where}: type {kind!r} is not supported; use stdio (command) or http (url). "
            "Servers that speak only the old SSE transport need a bridge"
        )
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None):
        raise ConfigError(f"{where} needs either command (a program to start) or url, not both")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise ConfigError(f"{where}: command must be a program name or path")
    if url is not None and not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        raise ConfigError(f"{where}: url must start with http:// or https://")
    trust = entry.get("trust", "ask")
    trusted: tuple[str, ...] = ()
    if isinstance(trust, list):
        trusted, trust = _strings(trust, "trust", where), "ask"
    elif trust not in ("ask", "allow"):
        raise ConfigError(f'{where}: trust must be "ask", "allow" or a list of tool names')
    tools = entry.get("tools")
    return McpServer(
        name=name,
        command=_expand(command, env, where) if command else None,
        args=tuple(_expand(a, env, where) for a in _strings(entry.get("args", []), "args", where)),
        env=_pairs(entry.get("env"), "env", where, env),
        cwd=_expand(_string(entry.get("cwd"), "cwd", where), env, where),
        url=_expand(url, env, where) if url else None,
        headers=_pairs(entry.get("headers"), "headers", where, env),
        tools=None if tools is None else _strings(tools, "tools", where),
        exclude=_strings(entry.get("exclude", []), "exclude", where),
        trust=trust,
        trusted_tools=trusted,
        timeout_s=positive_seconds(
            entry.get("timeout"), DEFAULT_CALL_TIMEOUT_S, f"{where}: timeout"
        ),
        startup_timeout_s=positive_seconds(
            entry.get("startup_timeout"), DEFAULT_STARTUP_TIMEOUT_S, f"{where}: startup_timeout"
        ),
        source=source,
    )


def _strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: {key} must be a list of strings")
    return tuple(value)


def _string(value: Any, key: str, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be a string")
    return value


def _pairs(value: Any, key: str, where: str, env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str | int | float | bool) for k, v in value.items()
    ):
        raise ConfigError(f'{where}: {key} must map names to strings, e.g. {{"A": "1"}}')
    return tuple((k, _expand(str(v), env, where)) for k, v in value.items())


def _expand(text: str | None, env: Mapping[str, str], where: str) -> Any:
    """``text`` with ``${VAR}`` and ``${VAR:-default}`` replaced from ``env``."""
    if text is None:
        return None

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if env.get(name):
            return env[name]
        if default is not None:
            return default
        raise ConfigError(
            f"{where} uses ${{{name}}}, which is not set; set it or write ${{{name}:-default}}"
        )

    return _VARIABLE.sub(value, text)


__all__ = ["McpServer", "Trust", "load_mcp_json", "merge", "servers_from_toml"]
