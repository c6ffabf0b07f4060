"""The ``localhand.toml`` localhand obeys: which file, whether its content is trusted, and
whether it counts as a workspace file.

``LOCALHAND_CONFIG`` names a file (the user's choice: trusted as it is at its first use,
``localhand.safety.trust.store.use_named``); otherwise ``./localhand.toml`` is found by itself and
used only with content the user trusted (``localhand trust``), else ignored with a warning.
A found file, or a named one lying in the directory localhand started in, is a workspace
file: the keys of ``localhand.config.workspace_keys`` that route data or loosen safety are
never taken from it. A ``LOCALHAND_CONFIG`` naming no file is an error, not an empty file.

The user's own file, ``$XDG_CONFIG_HOME/localhand/config.toml`` (``~/.config/...``), is read
by ``read_user_config``: the user's, so every key and no trust step (``config.distrusting``
still withholds the keys above when a run's workspace holds it). ``localhand.config.settings``, the
dashboard's ``[dashboard]`` and the batch ``[pool]`` all read the file through
``read_config``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localhand.config.workspace_keys import explained
from localhand.errors import ConfigError
from localhand.paths import user_config_path
from localhand.safety.trust.store import TrustStore, use_discovered, use_named

_warned: set[str] = set()


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """A ``localhand.toml`` read once, with trusted content."""

    path: Path
    data: dict[str, Any]
    """The parsed TOML."""
    in_workspace: bool
    """Found by itself, or lying in the directory localhand started in: a workspace file."""


def config_path(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> tuple[Path, bool]:
    """The ``localhand.toml`` settings come from, and whether the user named it
    (``LOCALHAND_CONFIG``) rather than localhand finding it in ``cwd``."""
    env = os.environ if env is None else env
    if env.get("LOCALHAND_CONFIG"):
        return Path(env["LOCALHAND_CONFIG"]).expanduser(), True
    return (cwd or Path.cwd()) / "localhand.toml", False


def read_config(
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    warn: Callable[[str], None] | None = None,
) -> ConfigFile | None:
    """The configuration file with trusted content, parsed; ``None`` when there is none, or
    it was found by itself and is not trusted (``warn`` is told how to trust it). A named file
    that changed since it was trusted is asked about, or refused (``ConfigError``)."""
    path, named = config_path(env, cwd)
    if named and not path.is_file():  # a typo must not silently mean "no settings"
        raise ConfigError(
            f"LOCALHAND_CONFIG names {path}, which is not a file: create it, correct the path, "
            "or unset LOCALHAND_CONFIG to use ./localhand.toml and your own "
            "~/.config/localhand/config.toml"
        )
    if not path.is_file():
        return None

    store = TrustStore()  # where localhand's own data is: this process's environment
    if named:
        seen = use_named(path, "configuration file (LOCALHAND_CONFIG)", store=store)
    else:
        found = use_discovered(path, "settings file", warn or warn_once, store=store)
        if found is None:
            return None
        seen = found
    import tomllib  # only when there is a file to read (start-up time)

    try:
        data = tomllib.loads(seen.text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot read {path}: {exc}. Fix the file or remove it.") from None
    here = os.path.realpath(cwd or Path.cwd())
    return ConfigFile(path, data, not named or inside(seen.key, here))


def read_user_config(env: Mapping[str, str] | None = None) -> ConfigFile | None:
    """The user's own ``config.toml``, parsed; ``None`` when there is none."""
    path = user_config_path(env)
    if path is None or not path.is_file():
        return None
    import tomllib  # loaded only when used

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}. Fix the file or remove it.") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    return ConfigFile(path, data, in_workspace=False)


def table_of(data: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """``[localhand.NAME]`` when the file has it, else ``[NAME]``, else ``default``."""
    nested = data.get("localhand")
    return nested[name] if isinstance(nested, dict) and name in nested else data.get(name, default)


def inside(path: str | Path, root: str | Path) -> bool:
    """Whether ``path`` is ``root`` or lies under it (both compared as real paths)."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def warn_once(message: str) -> None:
    """``warning: MESSAGE`` on standard error, once per process, control characters inert."""
    from localhand.safety.approval.approver import escape  # off load_settings' path

    if message in _warned:
        return
    _warned.add(message)

    sys.stderr.write(f"warning: {escape(message)}\n")
    sys.stderr.flush()


def withheld_table(config: ConfigFile, table: str, key: str) -> bool:
    """Whether ``[table] key`` of ``config`` is not taken because it is a workspace file (one
    warning says so)."""
    if not config.in_workspace:
        return False
    name = f"{table}.{key}"
    warn_once(
        f"{config.path} is in the project, where the model can write, so its [{table}] {key} "
        f"is not used: {explained([name])}. Give it in a localhand.toml outside the project "
        "(LOCALHAND_CONFIG=PATH) or as a flag."
    )
    return True


__all__ = ["ConfigFile", "config_path", "inside", "read_config", "warn_once", "withheld_table"]
