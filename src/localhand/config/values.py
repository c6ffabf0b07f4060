"""Reading settings' values: the tables of a ``localhand.toml`` (or the user's ``config.toml``)
and each value checked and converted, with a message that names where it came from.
``localhand.config.settings`` puts the layers together."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localhand.config.options import APPROVE_POLICIES, BACKENDS, NUMBERS, PLAN_MODES, checked
from localhand.errors import ConfigError
from localhand.safety.box.table import SANDBOX_SETTINGS

CHOICES = {
    "backend": BACKENDS,
    "approve": APPROVE_POLICIES,
    "sandbox": SANDBOX_SETTINGS,
    "nudge_limit_per": ("streak", "run"),  # localhand.run.guardrails.Limits.nudges_per
    "plan_mode": PLAN_MODES,
    "tool_mode": ("auto", "native", "schema"),
}
"""The settings that take one of a few words, and the words."""


def read_toml(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The settings of a parsed ``localhand.toml``."""
    from localhand.safety.box.table import sandbox_table  # only for a file

    table = data.get("localhand", data)
    values = {k.replace("-", "_"): v for k, v in table.items() if not isinstance(v, dict)}
    found = {
        **values,
        **sandbox_table(data.get("sandbox"), path),
        **_table("plan", data.get("plan"), path),
        **_table("run", data.get("run"), path),
        **_table("telemetry", data.get("telemetry"), path),
    }
    if "mcp" in data:  # [mcp.servers.NAME]: the MCP servers to start (localhand.mcp.config)
        from localhand.mcp.config import servers_from_toml  # only when a file has the table

        found["mcp_servers"] = servers_from_toml(data["mcp"], path)
    if "hooks" in data:  # [hooks]: the user's commands at each tool call (localhand.hooks)
        from localhand.hooks.config import hooks_from_toml  # only when a file has the table

        found["hooks"] = hooks_from_toml(data["hooks"], path)
    if any(key in table or key in data for key in ("profiles", "profile")):
        # [profiles.NAME] and [profile]: changes to the model families' profiles.
        from localhand.profiles import read_profiles  # only when a file has the tables

        found["profiles"] = read_profiles(data, source=str(path))
    return found


_TABLES: dict[str, tuple[dict[str, str], str]] = {
    "plan": (
        {"default_mode": "plan_mode"},
        f'default_mode = "..." (one of {", ".join(PLAN_MODES)})',
    ),
    "run": (
        {
            key: key
            for key in ("nudge_limit_per", "instruction_files", "delegate_share", "max_jobs")
        },
        'nudge_limit_per = "streak" or "run", instruction_files = ["AGENTS.md", ...], '
        "delegate_share = 0.5 and max_jobs = 4",
    ),
    "telemetry": (
        {"otel": "otel", "content": "otel_content"},
        "otel = true/false, content = true/false",
    ),
}
"""The tables beside the top level: the setting each of their keys gives (``[telemetry]``'s
switch OpenTelemetry spans for each run and whether they carry the conversation,
``localhand.telemetry``), and what a wrong table is told they take."""


def _table(name: str, table: Any, path: Path) -> dict[str, Any]:
    """The settings of the table ``[name]``, checked by ``convert`` as the same settings from
    ``LOCALHAND_*`` variables are, and told, when wrong, in words that name the table, what it
    takes and the file."""
    if table is None:
        return {}
    keys, takes = _TABLES[name]
    usage = f"[{name}] in {path} takes only {takes}"
    if not isinstance(table, dict) or set(table) - set(keys):
        raise ConfigError(usage)
    found = {}
    for key, value in table.items():
        try:
            found[keys[key]] = convert(keys[key], value, str(path))
        except ConfigError as exc:
            wrong = f"[{name}] {key} = {value!r}: {exc.__cause__}"  # what is wrong, first
            raise ConfigError(f"{wrong}. {usage}") from None
    return found


def instruction_names(value: Any) -> tuple[str, ...]:
    """File names (never paths: the nearest one to the work is looked up in the workspace) from
    a list, or from a comma-separated string (``LOCALHAND_INSTRUCTION_FILES``)."""
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise ValueError('give a list of file names, e.g. ["AGENTS.md", "CLAUDE.md"]')
    names = [name.strip() for name in names if name.strip()]
    for name in names:
        if "/" in name or "\\" in name or name in (".", ".."):
            raise ValueError(f"{name!r} is not a plain file name (e.g. AGENTS.md)")
    return tuple(names)


def convert(name: str, value: Any, source: str) -> Any:
    try:
        if name in NUMBERS:
            return checked(value, *NUMBERS[name])
        if name == "think":
            return parse_think(str(value))
        if name in CHOICES and value not in CHOICES[name]:
            raise ValueError(f"must be one of {', '.join(CHOICES[name])}")
        if name in ("isolate_network", "archive_secrets", "watch_replies", "otel", "otel_content"):
            if not isinstance(value, bool | str):  # a TOML 1 is not a switch
                raise ValueError("must be true or false")
            return parse_bool(str(value))
        if name in ("sandbox_read", "sandbox_limits", "sandbox_allow_hosts", "sandbox_env"):
            return tuple(value)
        if name in ("mcp_servers", "hooks") and not isinstance(value, tuple):
            raise ValueError("give it as tables: [mcp.servers.NAME], [[hooks.KIND]]")
        if name in ("profiles", "mcp_servers", "hooks"):  # read and checked by read_toml
            return value
        if name == "instruction_files":
            return instruction_names(value)
        return str(value) if value is not None else None
    except ValueError as exc:
        raise ConfigError(f"setting {name}={value!r} in {source}: {exc}") from exc


def parse_think(value: str) -> bool | str:
    lowered = value.strip().lower()
    if lowered in {"low", "medium", "high"}:
        return lowered
    try:
        return parse_bool(lowered)
    except ValueError:
        raise ValueError("must be true, false, low, medium or high") from None


def parse_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in {"true", "1", "yes", "on"}:
        return True
    if lowered in {"false", "0", "no", "off"}:
        return False
    raise ValueError("must be true or false")
