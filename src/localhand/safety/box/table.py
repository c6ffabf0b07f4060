"""``[sandbox]`` in ``localhand.toml``: the mode, paths to show, the network, the limits, the
user's variables commands see (``env``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from localhand.errors import ConfigError
from localhand.safety.box.limits import LIMIT_KEYS, limits_table

SANDBOX_SETTINGS = ("workspace-write", "read-only", "off", "required")
"""The values of ``--sandbox`` and ``[sandbox] mode`` (``localhand.safety.box.sandbox``)."""


def sandbox_table(table: Any, path: Path) -> dict[str, Any]:
    """``[sandbox]``: ``mode``, ``read`` (paths under $HOME), ``network``, ``allow_hosts``,
    the limits and ``env`` (variable names or ``PREFIX_*`` patterns)."""
    if table is None:
        return {}

    allowed = {"mode", "read", "network", "allow_hosts", "env", *LIMIT_KEYS}
    if not isinstance(table, dict) or set(table) - allowed:
        keys = (
            'mode = "...", read = ["~/..."], network = "proxy"/"host", allow_hosts = [...], '
            'tmp_size = "1G", memory = "4G", processes = 1024 and env = ["NAME", "PREFIX_*"]'
        )
        raise ConfigError(f"[sandbox] in {path} takes only {keys}")
    values: dict[str, Any] = {}
    if set(table) & set(LIMIT_KEYS):
        values["sandbox_limits"] = limits_table(table, str(path))
    if "network" in table or "allow_hosts" in table:
        from localhand.safety.box.allow_hosts import network_settings  # only for a file with them

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
    if "env" in table:
        values["sandbox_env"] = _env_names(table["env"], path)
    return values


_ENV_NAME = re.compile(r"[A-Za-z_*?][A-Za-z0-9_*?]*")


def _env_names(names: Any, path: Path) -> tuple[str, ...]:
    """``[sandbox] env``: variable names, or patterns with ``*`` (``PREFIX_*``), not ``*``."""
    good = isinstance(names, list) and all(
        isinstance(n, str) and _ENV_NAME.fullmatch(n) and n.strip("*?") for n in names
    )
    if not good:
        raise ConfigError(
            f"[sandbox] env in {path} must be a list of environment variable names or "
            'patterns, e.g. ["DATABASE_URL", "MYAPP_*"] (a lone "*" is not allowed: name '
            "what commands need)"
        )
    return tuple(names)
