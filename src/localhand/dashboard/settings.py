"""The dashboard's own settings: the ``[dashboard]`` table of ``localhand.toml``.

    [dashboard]
    workspaces = ["~/code", "/srv/projects"]   # where tasks started from the page may run

A task started from the page may only use a workspace inside one of these roots (after
symlinks and ``..`` are resolved): the page can start runs that edit files and run commands,
so it must not be able to point them at ``/`` or the home directory. Without the table the
only root is the directory ``localhand serve`` started in. Relative roots are relative to the
file that names them; ``~`` is expanded.

The table is read from the same file ``load_settings`` reads, with trusted content only
(``localhand.config.files``), as ``[dashboard]`` or ``[localhand.dashboard]``; a
``localhand.toml`` in the project gives no roots (the model could have written ``"/"``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localhand.config.files import read_config, table_of, withheld_table
from localhand.errors import ConfigError

KNOWN_KEYS = frozenset({"workspaces"})


@dataclass(frozen=True, slots=True)
class DashboardSettings:
    """What ``localhand serve`` needs beyond the model settings."""

    workspaces: tuple[Path, ...]
    """Roots a page-started task's workspace must be inside; real paths, no symlinks."""


def load_dashboard_settings(
    roots: Sequence[str | Path] = (),
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> DashboardSettings:
    """``roots`` when given (``serve --workspace-root``), else ``[dashboard] workspaces``,
    else the current directory. Raises ``ConfigError`` naming the file and the bad value."""
    cwd = cwd or Path.cwd()
    if roots:
        return DashboardSettings(_roots([str(r) for r in roots], cwd, "--workspace-root"))

    config = read_config(env, cwd)
    table = _table(config.data, config.path) if config is not None else {}
    if (
        config is not None
        and "workspaces" in table
        and withheld_table(config, "dashboard", "workspaces")
    ):
        table = {k: v for k, v in table.items() if k != "workspaces"}
    path = config.path if config is not None else Path("localhand.toml")
    where = f"{path} [dashboard]"
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        known = ", ".join(sorted(KNOWN_KEYS))
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {known}")
    configured = table.get("workspaces")
    if configured is None:
        return DashboardSettings(_roots([str(cwd)], cwd, "the current directory"))
    if not isinstance(configured, list) or not all(isinstance(r, str) and r for r in configured):
        raise ConfigError(f'{where}: workspaces must be a list of directories, ["~/code", ...]')
    if not configured:
        raise ConfigError(f"{where}: workspaces is empty; name at least one directory")
    return DashboardSettings(_roots(configured, path.parent, where))


def broad_roots(settings: DashboardSettings) -> list[Path]:
    """Roots that give the page the whole machine or the whole home directory: allowed (the
    user chose them) but worth a warning when ``serve`` starts."""
    wide = {Path("/"), Path(os.path.realpath(Path.home()))}
    return [root for root in settings.workspaces if root in wide]


def _table(data: dict[str, Any], path: Path) -> dict[str, Any]:
    table = table_of(data, "dashboard", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: dashboard must be a table, [dashboard]")
    return table


def _roots(names: Sequence[str], base: Path, where: str) -> tuple[Path, ...]:
    roots: list[Path] = []
    for name in names:
        root = Path(os.path.realpath(base / Path(name).expanduser()))
        if not root.is_dir():
            raise ConfigError(f"{where}: workspace root {name} is not a directory ({root})")
        if root not in roots:
            roots.append(root)
    return tuple(roots)
