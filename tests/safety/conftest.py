"""Fixtures the safety tests share: a pseudo-terminal for the questions an approver asks."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def terminal() -> Iterator[tuple[int, str]]:
    """A pseudo-terminal: (the person's side, the device localhand asks on)."""
    person, device = os.openpty()
    try:
        yield person, os.ttyname(device)
    finally:
        os.close(person)
        os.close(device)
