"""Settings, in layers, each over the one before: defaults; the user's own file
``$XDG_CONFIG_HOME/localhand/config.toml`` (default ``~/.config/localhand/config.toml``: every
key, it is the user's); ``localhand.toml`` (the workspace file, or the file in
``LOCALHAND_CONFIG``); environment variables; command-line flags. ``Settings.sources`` says
which layer gave each value (``localhand config`` prints it).

Environment variables: ``OLLAMA_HOST`` (as the Ollama client reads it), and ``LOCALHAND_``
with a setting's name (``LOCALHAND_MODEL``; every one is in ``ENV``).
``localhand.toml`` is read from the current directory (or the path in ``LOCALHAND_CONFIG``,
which must exist), from its ``[localhand]`` table or its top level, plus the ``[sandbox]``,
``[plan]``, ``[run]``, ``[telemetry]`` and ``[mcp.servers.NAME]`` tables (the user's file has
the same shape); only with content the user trusted, and a file in the project gives no key that
routes data or loosens safety (``localhand.config.files``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.config.files import inside, read_config, read_user_config, warn_once
from localhand.config.values import convert, read_toml
from localhand.config.workspace_keys import (
    PROVENANCE,
    explained,
    withheld,
    without_withheld,
)
from localhand.errors import ConfigError
from localhand.models.base import DEFAULT_MAX_REPLY_TOKENS
from localhand.safety.trust.store import use_named

if TYPE_CHECKING:
    from localhand.hooks.config import Hook
    from localhand.mcp.config import McpServer
    from localhand.profiles import ProfileSettings

DEFAULT_MODEL = "qwen3:8b"
FLAG = "flag"
"""``Settings.sources``' word for a value given on the command line."""


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
    saved_slots: int = 8
    """Runs whose caches llama-server keeps (``--slot-save-path``) for a run continuing one."""
    think: bool | str | None = None
    """Ask thinking models to think: ``true``, ``false``, ``low``, ``medium``, ``high``."""
    request_timeout: float = 300.0
    """Seconds one model request may take; the first, while the model loads, gets 3x."""
    max_reply_tokens: int = DEFAULT_MAX_REPLY_TOKENS
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
    (``localhand.safety.box.limits.BoxLimits``), as (name, value; None: no limit) pairs."""
    sandbox_network: str = "proxy"
    """``proxy`` (the allow-list proxy) or ``host`` (this machine's network, shared)."""
    sandbox_allow_hosts: tuple[str, ...] = ()
    """Hosts (``HOST``, ``HOST:PORT``) the proxy relays to besides the package registries."""
    sandbox_env: tuple[str, ...] = ()
    """``[sandbox] env``: the variables (names, ``PREFIX_*`` patterns) commands see besides
    the allow-list (``localhand.safety.secrets.environment.BOX_NAMES``)."""
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
    instruction_files: tuple[str, ...] = ("AGENTS.md",)
    """``[run] instruction_files``: the project files read as the model's instructions, the
    one nearest to the work winning (``localhand.prompt.instructions``); each is used only once
    the user trusts its content (``localhand trust``). Add ``CLAUDE.md`` or ``GEMINI.md`` here;
    ``[]`` reads none."""
    delegate_share: float = 0.5
    """``[run] delegate_share``: the share of the run's iterations and token budget that a
    helper (the ``delegate`` tool, ``localhand.run.delegate``) may take, from 0 (no such tool)
    to 1."""
    max_jobs: int = 4
    """``[run] max_jobs``: background commands (``run_command``'s ``background``) a run may
    have running at once (``localhand.tools.jobs``); 0 allows none."""
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
    hooks: tuple[Hook, ...] = ()
    """The user's commands at each tool call and at the end of a run (``[hooks]``, see
    ``localhand.hooks``): only from the user's own ``config.toml``, never a ``localhand.toml``."""
    otel: bool | None = None
    """``[telemetry] otel``: OpenTelemetry spans for each run (``localhand.telemetry``); ``None``:
    on only when the program localhand runs in has imported ``opentelemetry.trace``."""
    otel_content: bool = False
    """``[telemetry] content``: the spans carry prompts, answers and tool arguments and results."""

    config_file: str | None = None
    """The ``localhand.toml`` these settings were read from, if any."""
    from_file: frozenset[str] = frozenset()
    """The settings whose value came from ``config_file`` (not a variable or a flag)."""
    user_file: str | None = None
    """The user's own ``config.toml`` these settings were read from, if any."""
    sources: tuple[tuple[str, str], ...] = ()
    """(setting, where its value came from) for each setting not at its default:
    ``user file PATH``, ``workspace file PATH``, ``LOCALHAND_CONFIG PATH``, ``env VAR`` or
    ``flag``."""

    def with_overrides(self, **values: Any) -> Settings:
        """Apply flags; ``None`` means the flag was not given."""
        given = {k: v for k, v in values.items() if v is not None}
        sources = tuple((k, s) for k, s in self.sources if k not in given)
        return replace(
            self,
            **given,
            from_file=self.from_file - set(given),
            sources=sources + tuple((k, FLAG) for k in given),
        )

    def source_of(self, name: str) -> str:
        """Where setting ``name``'s value came from (``default`` when no layer gave it)."""
        return dict(self.sources).get(name, "default")


def distrusting(settings: Settings, workspace: Path) -> tuple[Settings, list[str]]:
    """``settings`` without what a model could have set for itself: from a settings file
    inside the workspace (where the model's commands write; the user's own ``config.toml``
    too, when the workspace holds it), the keys that route data or loosen safety
    (``localhand.config.workspace_keys``) are not taken, even when the user trusted the file;
    they fall back to their defaults, and its MCP servers are not started. Also returns what
    to tell the person about it. (``load_settings`` already leaves them out of a file found
    in the directory localhand started in.)"""
    messages: list[str] = []
    user = frozenset(n for n, s in settings.sources if s == f"user file {settings.user_file}")
    for path, names in ((settings.config_file, settings.from_file), (settings.user_file, user)):
        if path is not None:
            settings, said = _distrusting_file(settings, path, names, workspace)
            messages += said
    return settings, messages


def _distrusting_file(
    settings: Settings, path: str, names: frozenset[str], workspace: Path
) -> tuple[Settings, list[str]]:
    if not inside(path, workspace):
        return settings, []
    ignored: dict[str, Any] = {
        name: getattr(Settings(), name)
        for name in names
        if name != "mcp_servers" and withheld(name, getattr(settings, name))
    }
    # Servers from --mcp-config files, which the person named, stay.
    kept = tuple(s for s in settings.mcp_servers if s.source != path)
    if len(kept) < len(settings.mcp_servers):
        ignored["mcp_servers"] = kept
    if not ignored:
        return settings, []
    message = (
        f"{path} is inside the workspace, where the model can write, so these of its "
        f"settings are not used: {explained(sorted(ignored))}. Give them as flags, "
        "LOCALHAND_* variables or --mcp-config FILE, or keep the file outside the workspace."
    )
    sources = tuple((n, s) for n, s in settings.sources if n not in ignored)
    from_file = settings.from_file - set(ignored)
    return replace(settings, **ignored, from_file=from_file, sources=sources), [message]


NAMES = tuple(f.name for f in fields(Settings) if f.name not in PROVENANCE)
"""Every setting's name, in ``Settings``' order (not the fields that say where they came from)."""
_NO_ENV = frozenset(("host", "profiles", "mcp_servers", "hooks"))
"""Settings with no ``LOCALHAND_*`` variable besides ``[sandbox]``'s details: the host is
``OLLAMA_HOST``, as the Ollama client reads it, and the tables come only from files."""
ENV = {
    name: f"LOCALHAND_{name.upper()}"
    for name in NAMES
    if name not in _NO_ENV and not name.startswith("sandbox_")
}
"""Each setting's environment variable: ``LOCALHAND_`` and its name."""
ENV["isolate_network"] = "LOCALHAND_NO_NETWORK"


def load_settings(
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    warn: Callable[[str], None] | None = None,
) -> Settings:
    """Defaults, then the user's ``config.toml``, then ``localhand.toml`` (with trusted content
    only: ``localhand.config.files``), then the environment. ``warn`` (default: standard
    error, once) hears about a file or keys not used."""
    env = dict(os.environ) if env is None else env
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    user = read_user_config(env)
    if user is not None:
        values = read_toml(user.data, user.path)
        _validated(values, source=str(user.path))  # its errors name it
        sources = dict.fromkeys(values, f"user file {user.path}")
    config = read_config(env, cwd, warn)
    from_file: dict[str, Any] = {}
    if config is not None and config.in_workspace:
        # Its MCP servers are not even read: their ${VAR}s would be expanded; nor its hooks.
        data = {key: value for key, value in config.data.items() if key not in ("mcp", "hooks")}
        from_file = read_toml(data, config.path)
        _validated(from_file, source=str(config.path))  # wrong is an error, left out or not

        unread = [n for k, n in _UNREAD if k in config.data]
        from_file = without_withheld(from_file, config.path, warn or warn_once, also=unread)
    elif config is not None:
        from_file = read_toml(_without_hooks(config.data, config.path, warn), config.path)
    if config is not None:
        kind = "workspace file" if config.in_workspace else "LOCALHAND_CONFIG"
        sources.update(dict.fromkeys(from_file, f"{kind} {config.path}"))
        values = _layered(values, from_file)
    for name, var in ENV.items():
        if env.get(var):
            values[name] = env[var]
            from_file.pop(name, None)
            sources[name] = f"env {var}"
    files = [str(f.path) for f in (user, config) if f is not None]
    settings = _validated(values, source=" or ".join([*files, "LOCALHAND_* variables"]))
    return replace(
        settings,
        config_file=str(config.path) if config is not None else None,
        from_file=frozenset(from_file),
        user_file=str(user.path) if user is not None else None,
        sources=tuple(sorted(sources.items())),
    )


_UNREAD = (("mcp", "mcp_servers"), ("hooks", "hooks"))
"""The tables of a workspace file not even read, and the settings they would give."""


def _without_hooks(
    data: dict[str, Any], path: Path, warn: Callable[[str], None] | None
) -> dict[str, Any]:
    """``data`` of a ``localhand.toml`` outside the workspace (``LOCALHAND_CONFIG``) without
    its ``[hooks]``: hooks run commands at every tool call, so only the user's own
    ``config.toml`` gives them."""
    if "hooks" in data:
        (warn or warn_once)(
            f"{path} has a [hooks] table, which is not used: hooks are read only from your own "
            "~/.config/localhand/config.toml."
        )
    return {key: value for key, value in data.items() if key != "hooks"}


def _layered(under: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over``'s values over ``under``'s; MCP servers of both, a name in ``over`` replacing
    the same name in ``under``."""
    if "mcp_servers" in under and "mcp_servers" in over:
        from localhand.mcp.config import merge  # off the first request's path

        over = {**over, "mcp_servers": merge(under["mcp_servers"], over["mcp_servers"])}
    return {**under, **over}


def with_mcp_config(settings: Settings, files: list[Path]) -> Settings:
    """``settings`` with the MCP servers of ``--mcp-config`` files added (a name given again
    replaces the earlier one). Read before localhand forgets its secrets: a ``${VAR}`` in a
    file is read from the environment as it is now."""
    if not files:
        return settings
    from localhand.mcp.config import load_mcp_json, merge  # off the first request's path

    # Each file as the user trusted it (at its first use, or since): the text read is the
    # text hashed.
    seen = [use_named(path, "MCP configuration") for path in files]
    loaded = [load_mcp_json(s.path, text=s.text) for s in seen]
    return replace(settings, mcp_servers=merge(settings.mcp_servers, *loaded))


def _validated(values: dict[str, Any], source: str) -> Settings:
    unknown = sorted(set(values) - set(NAMES))
    if unknown:
        raise ConfigError(
            f"unknown setting(s) {', '.join(unknown)} in {source}; known: {', '.join(NAMES)}"
        )
    return Settings(**{name: convert(name, value, source) for name, value in values.items()})


__all__ = [
    "DEFAULT_MODEL",
    "ENV",
    "NAMES",
    "Settings",
    "distrusting",
    "load_settings",
    "with_mcp_config",
]
