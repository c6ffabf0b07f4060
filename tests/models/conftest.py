"""Fixtures the backend tests share: the warnings a backend gives, and a fake server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from localhand.testing import FakeOllama


@pytest.fixture
def warnings() -> list[str]:
    return []


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with FakeOllama() as server:
        yield server
