"""Which directories a task started from the page may work in: only inside the configured roots.

The page can start runs that edit files and run commands, so the workspace it names is checked
the way the operating system will see it: ``~`` expanded, relative to the directory ``serve``
runs in, then every symlink and ``..`` resolved (``os.path.realpath``). Only then is it compared
with the roots (themselves real paths, see ``settings``), so ``root/link-to-home`` and
``root/../elsewhere`` are refused like ``/`` and ``~``. The run gets the resolved path, not the
name the page sent.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from localhand.errors import ConfigError
from localhand.events import clip

SHOWN_CHARS = 200
"""Longest piece of a page-supplied path quoted back in an error message: requests are never
echoed back whole."""


class WorkspaceRefused(ConfigError):
    """The page named a workspace outside every root, or one that is not a directory."""


def resolve_workspace(requested: str, roots: Sequence[Path], cwd: Path | None = None) -> Path:
    """The real directory for ``requested``, or ``WorkspaceRefused`` saying why not."""
    name = requested.strip()
    if "\0" in name:
        raise WorkspaceRefused("the workspace path contains a NUL character")
    real = Path(os.path.realpath((cwd or Path.cwd()) / Path(name).expanduser()))
    shown = clip(name, SHOWN_CHARS)
    if not any(real == root or real.is_relative_to(root) for root in roots):
        where = "" if str(real) == name else f" (it resolves to {clip(str(real), SHOWN_CHARS)})"
        raise WorkspaceRefused(
            f"workspace {shown} is outside the dashboard's workspace roots{where}: "
            f"{', '.join(str(r) for r in roots)}. Pick a directory inside one of them, or add "
            "a root to [dashboard] workspaces in localhand.toml (or restart with "
            "`localhand serve --workspace-root DIR`)"
        )
    if not real.is_dir():
        raise WorkspaceRefused(f"workspace {shown} is not a directory on this machine")
    return real
