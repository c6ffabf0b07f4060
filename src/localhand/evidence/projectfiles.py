"""A project's own files as the checks read them: small text files, ``package.json``'s scripts.

Shared by the check files (``checkfiles``), ``--verify auto`` (``project_checks``) and the
report flags a check gets (``reporting``), so that all three read them alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def package_scripts(data: str | bytes) -> dict[str, Any]:
    """The ``scripts`` of a ``package.json`` with content ``data``; empty when it does not parse
    or has none."""
    try:
        scripts = json.loads(data).get("scripts") or {}
    except (ValueError, AttributeError):
        return {}
    return scripts if isinstance(scripts, dict) else {}


def npm_test_script(workspace: Path) -> str | None:
    """What ``npm test`` runs in ``workspace``: its ``package.json``'s test script, or None."""
    text = read_small(workspace / "package.json")
    test = None if text is None else package_scripts(text).get("test")
    return test if isinstance(test, str) else None


def read_small(path: Path, limit: int = 1_000_000) -> str | None:
    """A small text file's content, or ``None`` (missing, unreadable, a folder, too big)."""
    try:
        if not path.is_file() or path.stat().st_size > limit:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


__all__ = ["npm_test_script", "package_scripts", "read_small"]
