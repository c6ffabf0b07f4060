"""Settings: command-line flags over environment variables over ``localhand.toml`` over defaults.

Environment variables: ``OLLAMA_HOST`` (as the Ollama client reads it), ``LOCALHAND_MODEL``,
``LOCALHAND_BACKEND``, ``LOCALHAND_NUM_CTX_MAX``, ``LOCALHAND_KEEP_ALIVE``, ``LOCALHAND_THINK``,
``LOCALHAND_REQUEST_TIMEOUT``, ``LOCALHAND_MAX_REPLY_TOKENS``, ``LOCALHAND_PLAN_MODE`` and the
others in ``_ENV``.
``localhand.toml`` is read from the current directory (or the path in ``LOCALHAND_CONFIG``),
from its ``[localhand]`` table or its top level, plus the ``[sandbox]``, ``[plan]`` and
``[mcp.servers.NAME]`` tables; only with content the user trusted, and a file in the project
gives no key that routes data or loosens safety (``localhand.safety.config_file``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.errors import ConfigError
from localhand.safety.sandbox_table import SANDBOX_SETTINGS

if TYPE_CHECKING:
    from localhand.mcp.config import McpServer
    from localhand.profiles import ProfileSettings

BACKENDS = ("auto", "ollama", "openai", "embedded")
TOOL_MODES = ("auto", "native", "schema")
APPROVE_POLICIES = ("never", "dangerous", "always")
PLAN_MODES = ("teacher", "planner", "agentic")  # localhand.plan.executor.MODES
NUDGE_COUNTS = ("streak", "run")  # localhand.run.guardrails.Limits.nudges_per
DEFAULT_MODEL = "qwen3:8b"


@dataclass(frozen=True, slots=True)
class Settings:
    """How to reach the model. Task limits live on the task, not here."""

    model: str = DEFAULT_MODEL
    """The model's name on the server (``qwen3:8b``)."""
    backend: str = "auto"
    """``auto`` (Ollama when it answers), ``ollama``, ``openai`` or ``embedded``."""
    host: str | None = None
    """Server URL; for Ollama, ``None`` means ``OLLAMA_HOST`` or ``http://127.0.0.1:11434``."""
    num_ctx_max: int = 32768
    """Largest context window localhand will ask Ollama for."""
    keep_alive: str | None = None
    """How long Ollama keeps the model loaded after a request (``5m``, ``-1``)."""
    think: bool | str | None = None
    """Ask thinking models to think: ``true``, ``false``, ``low``, ``medium``, ``high``."""
    request_timeout: float = 300.0
    """Seconds one model request may take; the first, while the model loads, gets 3x."""
    max_reply_tokens: int = 4096  # localhand.models.base.DEFAULT_MAX_REPLY_TOKENS
    """The ceiling on one reply, thinking included (Ollama ``num_predict``, ``max_tokens``
    elsewhere): a model looping inside a reply is stopped there, not at the context window."""
    watch_replies: bool = False
    """The tool loop reads each reply as a stream and stops one that repeats itself within
    seconds (``localhand.models.watch``); off, every request is ``stream: false``."""
    gguf: str | None = None
    """GGUF file for the embedded backend (default: the tiny model package, when installed)."""
    tool_mode: str = "auto"
    """OpenAI-compatible servers: ``native`` tools, ``schema`` (constrained JSON), or ``auto``."""
    approve: str = "dangerous"
    """Which commands need a person's approval: ``never``, ``dangerous`` or ``always``."""
    isolate_network: bool = False
    """Run commands without network access, where the system allows it."""
    sandbox: str = "workspace-write"
    """Where commands run: ``workspace-write``, ``read-only``, ``off``, or ``required``
    (workspace-write, refusing to run commands where bubblewrap cannot)."""
    sandbox_read: tuple[str, ...] = ()
    """Paths under ``$HOME`` that sandboxed commands may read (``~/.gitconfig``)."""
    sandbox_limits: tuple[tuple[str, int | None], ...] = ()
    """``[sandbox]`` ``tmp_size``, ``memory`` and ``processes`` that differ from the defaults
    (``localhand.safety.box_limits.BoxLimits``), as (name, value; None: no limit) pairs."""
    sandbox_network: str = "proxy"
    """``proxy`` (the allow-list proxy) or ``host`` (this machine's network, shared)."""
    sandbox_allow_hosts: tuple[str, ...] = ()
    """Hosts (``HOST``, ``HOST:PORT``) the proxy relays to besides the package registries."""
    archive_secrets: bool = False
    """Keep secret-looking files (``.env``, keys) in the copy of the workspace kept for replay."""
    daily_token_budget: int | None = None
    """Tokens all tasks together may spend per day (checked in the run store's ledger)."""
    price_in: float | None = None
    """Price per million prompt tokens, to show money; local models cost nothing."""
    price_out: float | None = None
    """Price per million reply tokens."""
    nudge_limit_per: str = "streak"
    """``[run] nudge_limit_per``: the 2 nudges for unusable replies are per ``streak`` (in a
    row; a round of tool calls starts again) or per ``run`` (seed 001's count)."""
    plan_mode: str = "planner"
    """The mode ``localhand plan`` runs in when ``--mode`` is not given (seed 003's
    ``settings.defaultMode``): ``teacher``, ``planner`` or ``agentic``."""
    think_budget: int | None = None
    """Tokens a reply may think before it is cut and asked again with thinking off (0: no
    budget); ``None``: the model family's profile decides (``localhand.profiles``)."""
    profiles: ProfileSettings | None = None
    """The ``[profiles.NAME]`` and ``[profile]`` tables of ``localhand.toml``; ``None``: the
    built-in profiles as they are."""
    mcp_servers: tuple[McpServer, ...] = ()
    """MCP servers whose tools the tool loop offers (``[mcp.servers.NAME]``, ``--mcp-config``;
    see ``localhand.mcp.config``). Each says which file it came from."""

    config_file: str | None = None
    """The ``localhand.toml`` these settings were read from, if any."""
    from_file: frozenset[str] = frozenset()
    """The settings whose value came from ``config_file`` (not a variable or a flag)."""

    def with_overrides(self, **values: Any) -> Settings:
        """Apply flags; ``None`` means the flag was not given."""
        given = {k: v for k, v in values.items() if v is not None}
        return replace(self, **given, from_file=self.from_file - set(given))


def distrusting(settings: Settings, workspace: Path) -> tuple[Settings, list[str]]:
    """``settings`` without what a model could have set for itself: from a ``localhand.toml``
    inside the workspace (where the model's commands write), the keys that route data or
    loosen safety (``localhand.safety.workspace_keys``) are not taken, even when the user
    trusted the file; they fall back to their defaults, and its MCP servers are not started.
    Also returns what to tell the person about it. (``load_settings`` already leaves them
    out of a file found in the directory localhand started in.)"""
    if settings.config_file is None:
        return settings, []
    from localhand.safety.config_file import inside
    from localhand.safety.workspace_keys import explained, withheld

    if not inside(settings.config_file, workspace):
        return settings, []
    ignored: dict[str, Any] = {
        name: getattr(Settings(), name)
        for name in settings.from_file
        if name != "mcp_servers" and withheld(name, getattr(settings, name))
    }
    # Servers from --mcp-config files, which the person named, stay.
    kept = tuple(s for s in settings.mcp_servers if s.source != settings.config_file)
    if len(kept) < len(settings.mcp_servers):
        ignored["mcp_servers"] = kept
    if not ignored:
        return settings, []
    message = (
        f"{settings.config_file} is inside the workspace, where the model can write, so these "
        f"of its settings are not used: {explained(sorted(ignored))}. Give them as flags, "
        "LOCALHAND_* variables or --mcp-config FILE, or keep the file outside the workspace."
    )
    return replace(settings, **ignored, from_file=settings.from_file - set(ignored)), [message]


_ENV = {
    "model": "LOCALHAND_MODEL",
    "backend": "LOCALHAND_BACKEND",
    "num_ctx_max": "LOCALHAND_NUM_CTX_MAX",
    "keep_alive": "LOCALHAND_KEEP_ALIVE",
    "think": "LOCALHAND_THINK",
    "request_timeout": "LOCALHAND_REQUEST_TIMEOUT",
    "max_reply_tokens": "LOCALHAND_MAX_REPLY_TOKENS",
    "watch_replies": "LOCALHAND_WATCH_REPLIES",
    "gguf": "LOCALHAND_GGUF",
    "tool_mode": "LOCALHAND_TOOL_MODE",
    "approve": "LOCALHAND_APPROVE",
    "isolate_network": "LOCALHAND_NO_NETWORK",
    "sandbox": "LOCALHAND_SANDBOX",
    "archive_secrets": "LOCALHAND_ARCHIVE_SECRETS",
    "daily_token_budget": "LOCALHAND_DAILY_TOKEN_BUDGET",
    "price_in": "LOCALHAND_PRICE_IN",
    "price_out": "LOCALHAND_PRICE_OUT",
    "plan_mode": "LOCALHAND_PLAN_MODE",
    "nudge_limit_per": "LOCALHAND_NUDGE_LIMIT_PER",
    "think_budget": "LOCALHAND_THINK_BUDGET",
}


def load_settings(
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    warn: Callable[[str], None] | None = None,
) -> Settings:
    """Defaults, then ``localhand.toml`` (with trusted content only:
    ``localhand.safety.config_file``), then the environment. ``warn`` (default: standard
    error, once) hears about a file or keys not used."""
    from localhand.safety.config_file import read_config, warn_once

    env = dict(os.environ) if env is None else env
    values: dict[str, Any] = {}
    config = read_config(env, cwd, warn)
    if config is not None and config.in_workspace:
        # Its MCP servers are not even read: their ${VAR}s would be expanded.
        data = {key: value for key, value in config.data.items() if key != "mcp"}
        values.update(_read_toml(data, config.path))
        _validated(values, source=str(config.path))  # a wrong value is an error, left out or not
        from localhand.safety.workspace_keys import without_withheld

        unread = ["mcp_servers"] if "mcp" in config.data else []
        values = without_withheld(values, config.path, warn or warn_once, also=unread)
    elif config is not None:
        values.update(_read_toml(config.data, config.path))
    from_file = set(values)
    for name, var in _ENV.items():
        if env.get(var):
            values[name] = env[var]
            from_file.discard(name)
    where = f"{config.path} or LOCALHAND_* variables" if config else "LOCALHAND_* variables"
    settings = _validated(values, source=where)
    if config is None:
        return settings
    return replace(settings, config_file=str(config.path), from_file=frozenset(from_file))


def _read_toml(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The settings of a parsed ``localhand.toml``."""
    from localhand.safety.sandbox_table import sandbox_table  # only for a file

    table = data.get("localhand", data)
    values = {k.replace("-", "_"): v for k, v in table.items() if not isinstance(v, dict)}
    return {
        **values,
        **sandbox_table(data.get("sandbox"), path),
        **_plan_table(data.get("plan"), path),
        **_run_table(data.get("run"), path),
        **_mcp_table(data.get("mcp"), path),
        **_profiles_table(data, path),
    }


def _profiles_table(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """``[profiles.NAME]`` and ``[profile]``: changes to the model families' profiles."""
    table = data.get("localhand", data)
    if not any(key in table or key in data for key in ("profiles", "profile")):
        return {}
    from localhand.profiles import read_profiles  # only when a file has the tables

    return {"profiles": read_profiles(data, source=str(path))}


def _mcp_table(table: Any, path: Path) -> dict[str, Any]:
    """``[mcp.servers.NAME]``: the MCP servers to start (``localhand.mcp.config``)."""
    if table is None:
        return {}
    from localhand.mcp.config import servers_from_toml  # only when a file has the table

    return {"mcp_servers": servers_from_toml(table, path)}


def with_mcp_config(settings: Settings, files: list[Path]) -> Settings:
    """``settings`` with the MCP servers of ``--mcp-config`` files added (a name given again
    replaces the earlier one). Read before localhand forgets its secrets: a ``${VAR}`` in a
    file is read from the environment as it is now."""
    if not files:
        return settings
    from localhand.mcp.config import load_mcp_json, merge
    from localhand.safety.trust import use_named

    # Each file as the user trusted it (at its first use, or since): the text read is the
    # text hashed.
    seen = [use_named(path, "MCP configuration") for path in files]
    loaded = [load_mcp_json(s.path, text=s.text) for s in seen]
    return replace(settings, mcp_servers=merge(settings.mcp_servers, *loaded))


def _run_table(table: Any, path: Path) -> dict[str, Any]:
    """``[run]``: ``nudge_limit_per`` (``"streak"`` or ``"run"``)."""
    if table is None:
        return {}
    per = table.get("nudge_limit_per") if isinstance(table, dict) else None
    if not isinstance(table, dict) or set(table) - {"nudge_limit_per"} or per not in NUDGE_COUNTS:
        raise ConfigError(f'[run] in {path} takes only nudge_limit_per = "streak" or "run"')
    return {"nudge_limit_per": per}


def _plan_table(table: Any, path: Path) -> dict[str, Any]:
    """``[plan]``: ``default_mode``. Checked here, where the message can name the table and the
    file; the same setting from ``LOCALHAND_PLAN_MODE`` is checked in ``_convert``."""
    allowed = ", ".join(PLAN_MODES)
    if table is None:
        return {}
    if not isinstance(table, dict) or set(table) - {"default_mode"}:
        raise ConfigError(f'[plan] in {path} takes only default_mode = "..." (one of {allowed})')
    if "default_mode" not in table:
        return {}
    mode = table["default_mode"]
    if not isinstance(mode, str) or mode not in PLAN_MODES:
        raise ConfigError(
            f"[plan] default_mode = {mode!r} in {path} is not a plan mode; use one of {allowed}"
        )
    return {"plan_mode": mode}


def _validated(values: dict[str, Any], source: str) -> Settings:
    from localhand.safety.workspace_keys import PROVENANCE  # not settings themselves

    known = {f.name: f for f in fields(Settings) if f.name not in PROVENANCE}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(
            f"unknown setting(s) {', '.join(unknown)} in {source}; known: {', '.join(known)}"
        )
    settings: dict[str, Any] = {}
    for name, value in values.items():
        settings[name] = _convert(name, value, source)
    return Settings(**settings)


def _convert(name: str, value: Any, source: str) -> Any:
    try:
        if name == "num_ctx_max":
            number = int(value)
            if number < 512:
                raise ValueError("must be at least 512")
            return number
        if name == "max_reply_tokens":
            return _positive_whole(value, "the most tokens one reply may have, e.g. 4096")
        if name == "daily_token_budget":
            number = int(value)
            if number < 1:
                raise ValueError("must be a positive number of tokens")
            return number
        if name in ("price_in", "price_out"):
            price = float(value)
            if price < 0:
                raise ValueError("must be zero or more (money per million tokens)")
            return price
        if name == "request_timeout":
            seconds = float(value)
            if seconds <= 0:
                raise ValueError("must be positive")
            return seconds
        if name == "think":
            return parse_think(str(value))
        if name == "backend" and value not in BACKENDS:
            raise ValueError(f"must be one of {', '.join(BACKENDS)}")
        if name == "approve" and value not in APPROVE_POLICIES:
            raise ValueError(f"must be one of {', '.join(APPROVE_POLICIES)}")
        if name in ("isolate_network", "archive_secrets", "watch_replies"):
            return value if isinstance(value, bool) else parse_bool(str(value))
        if name == "sandbox" and value not in SANDBOX_SETTINGS:
            raise ValueError(f"must be one of {', '.join(SANDBOX_SETTINGS)}")
        if name in ("sandbox_read", "sandbox_limits", "sandbox_allow_hosts"):
            return tuple(value)
        if name == "think_budget":
            number = int(value)
            if number < 0:
                raise ValueError("must be 0 (no budget) or a number of tokens")
            return number
        if name == "profiles":  # read and checked by _profiles_table
            return value
        if name == "mcp_servers":  # read and checked by _mcp_table
            if not isinstance(value, tuple):
                raise ValueError("give MCP servers as [mcp.servers.NAME] tables")
            return value
        if name == "nudge_limit_per" and value not in NUDGE_COUNTS:
            raise ValueError(f"must be one of {', '.join(NUDGE_COUNTS)}")
        if name == "plan_mode" and value not in PLAN_MODES:
            raise ValueError(f"must be one of {', '.join(PLAN_MODES)}")
        if name == "tool_mode" and value not in TOOL_MODES:
            raise ValueError(f"must be one of {', '.join(TOOL_MODES)}")
        return str(value) if value is not None else None
    except ValueError as exc:
        raise ConfigError(f"setting {name}={value!r} in {source}: {exc}") from exc


def _positive_whole(value: Any, what: str) -> int:
    """``value`` as a whole number of at least 1: from a variable's text or a toml integer;
    not a toml ``true`` (which ``int`` would take as 1) nor a fraction (which it would cut)."""
    wrong = f"must be a positive whole number ({what})"
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(wrong)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(wrong) from None
    if number < 1:
        raise ValueError(wrong)
    return number


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
