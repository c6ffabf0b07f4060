"""Settings: command-line flags over environment variables over ``localhand.toml`` over defaults.

Environment variables: ``OLLAMA_HOST`` (as the Ollama client reads it), ``LOCALHAND_MODEL``,
``LOCALHAND_BACKEND``, ``LOCALHAND_NUM_CTX_MAX``, ``LOCALHAND_KEEP_ALIVE``, ``LOCALHAND_THINK``,
``LOCALHAND_REQUEST_TIMEOUT``, ``LOCALHAND_MAX_REPLY_TOKENS``, ``LOCALHAND_PLAN_MODE`` and the
others in ``_ENV``.
``localhand.toml`` is read from the current directory (or the path in ``LOCALHAND_CONFIG``),
from its ``[localhand]`` table or its top level, plus the ``[sandbox]``, ``[plan]`` and
``[mcp.servers.NAME]`` tables.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.errors import ConfigError

if TYPE_CHECKING:
    from localhand.mcp.config import McpServer
    from localhand.profiles import ProfileSettings

BACKENDS = ("auto", "ollama", "openai", "embedded")
TOOL_MODES = ("auto", "native", "schema")
APPROVE_POLICIES = ("never", "dangerous", "always")
SANDBOX_SETTINGS = ("workspace-write", "read-only", "off", "required")  # safety.sandbox
PLAN_MODES = ("teacher", "planner", "agentic")  # localhand.plan.executor.MODES
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


_PROVENANCE = frozenset(("config_file", "from_file"))
"""Fields that say where settings came from: not settings themselves."""
LOOSENING = {
    "approve": lambda value: value == "never",
    "sandbox": lambda value: value == "off",
    "sandbox_read": bool,
    "sandbox_network": lambda value: value == "host",
    "sandbox_allow_hosts": bool,
    "archive_secrets": bool,
}
"""Settings that lower what stands between a model's commands and the machine, by value."""


def distrusting(settings: Settings, workspace: Path) -> tuple[Settings, list[str]]:
    """``settings`` without what a model could have set for itself: a ``localhand.toml``
    inside the workspace (where localhand is usually started, and the model writes) does not
    lower safety (``LOOSENING``); those values fall back to their defaults. Also returns what
    to tell the person about it."""
    if settings.config_file is None:
        return settings, []
    config = os.path.realpath(settings.config_file)
    root = os.path.realpath(workspace)
    if not (config == root or config.startswith(root.rstrip(os.sep) + os.sep)):
        return settings, []
    ignored = {
        name: getattr(Settings(), name)
        for name, loosens in LOOSENING.items()
        if name in settings.from_file and loosens(getattr(settings, name))
    }
    messages = []
    if ignored:
        said = ", ".join(f"{name} = {getattr(settings, name)!r}" for name in ignored)
        messages.append(
            f"{settings.config_file} is inside the workspace, where the model can write, so its "
            f"{said} is ignored: such a file cannot lower the safety of a run. Give it as a flag "
            "(--sandbox off, --approve never) or a LOCALHAND_* variable, or keep the file "
            "outside the workspace (LOCALHAND_CONFIG=PATH)."
        )
    # An MCP server is a program started outside the sandbox: one the model could have added
    # (or marked trusted) by writing the file is not started. Servers from --mcp-config files,
    # which the person named, stay.
    kept = tuple(s for s in settings.mcp_servers if s.source != settings.config_file)
    if len(kept) < len(settings.mcp_servers):
        dropped = ", ".join(s.name for s in settings.mcp_servers if s not in kept)
        ignored["mcp_servers"] = kept
        messages.append(
            f"{settings.config_file} is inside the workspace, where the model can write, so "
            f"its MCP servers ({dropped}) are not started. Give them with --mcp-config FILE, "
            "or keep the file outside the workspace (LOCALHAND_CONFIG=PATH)."
        )
    if not ignored:
        return settings, []
    return replace(settings, **ignored, from_file=settings.from_file - set(ignored)), messages


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
    "think_budget": "LOCALHAND_THINK_BUDGET",
}


def load_settings(env: dict[str, str] | None = None, cwd: Path | None = None) -> Settings:
    """Defaults, then ``localhand.toml``, then the environment."""
    env = dict(os.environ) if env is None else env
    values: dict[str, Any] = {}
    path = (
        Path(env["LOCALHAND_CONFIG"])
        if env.get("LOCALHAND_CONFIG")
        else (cwd or Path.cwd()) / "localhand.toml"
    )
    if path.is_file():
        values.update(_read_toml(path))
    from_file = set(values)
    for name, var in _ENV.items():
        if env.get(var):
            values[name] = env[var]
            from_file.discard(name)
    settings = _validated(values, source=f"{path} or LOCALHAND_* variables")
    if not path.is_file():
        return settings
    return replace(settings, config_file=str(path), from_file=frozenset(from_file))


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib  # only when there is a file to read (start-up time)

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}. Fix the file or remove it.") from exc
    table = data.get("localhand", data)
    values = {k.replace("-", "_"): v for k, v in table.items() if not isinstance(v, dict)}
    return {
        **values,
        **_sandbox_table(data.get("sandbox"), path),
        **_plan_table(data.get("plan"), path),
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

    loaded = [load_mcp_json(path) for path in files]
    return replace(settings, mcp_servers=merge(settings.mcp_servers, *loaded))


def _sandbox_table(table: Any, path: Path) -> dict[str, Any]:
    """``[sandbox]``: ``mode``, ``read`` (paths under $HOME), ``network``, ``allow_hosts``."""
    if table is None:
        return {}
    if not isinstance(table, dict) or set(table) - {"mode", "read", "network", "allow_hosts"}:
        keys = 'mode = "...", read = ["~/..."], network = "proxy"/"host", allow_hosts = [...]'
        raise ConfigError(f"[sandbox] in {path} takes only {keys}")
    values: dict[str, Any] = {}
    if "network" in table or "allow_hosts" in table:
        from localhand.safety.allow_hosts import network_settings  # only for a file with them
        try:
            values.update(network_settings(table))
        except ValueError as error:
            raise ConfigError(f"[sandbox] in {path}: {error}") from None
    if "mode" in table:
        values["sandbox"] = table["mode"]
    if "read" in table:
        read = table["read"]
        if not isinstance(read, list) or not all(isinstance(p, str) for p in read):
            raise ConfigError(
                f'[sandbox] read in {path} must be a list of paths, e.g. ["~/.gitconfig"]'
            )
        values["sandbox_read"] = tuple(read)
    return values


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
    known = {f.name: f for f in fields(Settings) if f.name not in _PROVENANCE}
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
        if name in ("sandbox_read", "sandbox_allow_hosts"):
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
