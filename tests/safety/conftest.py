"""Fixtures the safety tests share: a pseudo-terminal for the questions an approver asks."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def terminal() -> Iterator[tuple[int, str]]:
    """A pseudo-terminal: (the person's side, the device localhand asks on)."""
    person, device = os.openpty()
    with os.fdopen(person, "rb", 0), os.fdopen(device, "rb", 0):  # closes both ends after
        yield person, os.ttyname(device)
