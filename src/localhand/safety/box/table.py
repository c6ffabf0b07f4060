"""``[sandbox]`` in ``localhand.toml``: the mode, paths to show, the network, the limits, the
user's variables commands see (``env``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localhand.errors import ConfigError
from localhand.safety.box.limits import GIB

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


_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": GIB, "T": 1024**4}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)


def parse_size(value: object, name: str) -> int | None:
    """``"512M"``, ``"2G"``, ``1048576`` as bytes; ``"off"``, ``0`` or ``False`` as no limit.
    Raises ``ValueError`` saying what is accepted."""
    if value in ("off", "none", 0, False):
        return None
    matched = _SIZE.fullmatch(str(value)) if not isinstance(value, bool) else None
    if matched is None:
        raise ValueError(f'{name} must be a size such as "512M" or "2G", or "off"')
    return int(float(matched.group(1)) * _UNITS[matched.group(2).upper()])


def parse_count(value: object, name: str) -> int | None:
    """A positive whole number, or ``"off"`` / ``0`` for no limit."""
    if value in ("off", "none", 0, False):
        return None
    try:
        number = int(str(value))
    except ValueError:
        number = -1
    if number <= 0:
        raise ValueError(f'{name} must be a positive number such as 1024, or "off"')
    return number


LIMIT_KEYS = ("tmp_size", "memory", "processes")


def limits_table(table: Mapping[str, object], path: str) -> tuple[tuple[str, int | None], ...]:
    """``[sandbox]``'s ``tmp_size``, ``memory`` (sizes) and ``processes`` (a count) as
    ``Settings.sandbox_limits``; each may be ``"off"``. ``ConfigError`` names the file."""
    found: list[tuple[str, int | None]] = []
    for key in LIMIT_KEYS:
        if key in table:
            parse = parse_count if key == "processes" else parse_size
            try:
                found.append((key, parse(table[key], f"[sandbox] {key} in {path}")))
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
    return tuple(found)
