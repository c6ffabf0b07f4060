"""Trusting a file as the user's ``localhand trust FILE --yes`` does."""

from __future__ import annotations

from pathlib import Path

from localhand.safety.trust.store import Seen, TrustStore


def pin(path: Path, store: TrustStore | None = None) -> Seen:
    """Trust ``path`` as it is now, in ``store`` (the user's by default)."""
    store = store or TrustStore()
    seen = store.read(path)
    store.trust(seen)
    return seen
