"""Fixtures the file tools' tests share: an empty workspace ``ws`` and the tools on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from localhand.tools import FileTools, Workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def tools(root: Path) -> FileTools:
    return FileTools(Workspace(root))
