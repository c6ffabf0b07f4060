"""Fixtures the fake server's tests share: a fake server, and a plain HTTP client to it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from localhand.testing import FakeOllama


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with FakeOllama() as server:
        yield server


@pytest.fixture
def http(fake: FakeOllama) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fake.url, timeout=5) as client:
        yield client
