"""Workspaces the tests share: the shipped examples, copied, and small ones written from a dict.

One place for them, so a test says which workspace it needs in a line instead of a fixture
of its own (issue 20: ``demo`` and ``workspace`` were defined five times each).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

BUGGY = "def add(a, b):\n    return a - b\n"
"""``calc.py`` with the bug every demo task fixes."""
CHECK = "from calc import add\nassert add(2, 3) == 5, add(2, 3)\nprint('ok')\n"
"""``check_calc.py``: exits 0 once ``add`` is fixed."""
NOTES = "1. tests\n2. docs\n3. tag\n"


def workspace_with(root: Path, files: Mapping[str, str]) -> Path:
    """``root`` (made if needed) holding ``files``, relative path to text."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def user_file(config_home: Path, text: str) -> Path:
    """The user's own ``config.toml`` under ``config_home`` (``XDG_CONFIG_HOME``), holding
    ``text``."""
    path = config_home / "localhand" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def example_copy(name: str, destination: Path) -> Path:
    """A fresh copy of ``examples/NAME`` at ``destination``, for a test to change."""
    return Path(shutil.copytree(EXAMPLES / name, destination))
