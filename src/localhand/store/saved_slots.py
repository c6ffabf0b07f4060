"""Which run each saved llama-server slot holds (``localhand.session.kept_cache``).

The server offers no way to list or delete the files ``--slot-save-path`` collects, so they
are named from a ring of ``size`` names, the oldest overwritten first; this table says which
run's conversation each name holds now, so that a run continuing it knows which to restore.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localhand.store.db import Store


def ring_name(index: int) -> str:
    """The ``index``-th name of the ring (a name llama-server accepts: no path)."""
    return f"localhand-slot-{index}.bin"


def claim_name(store: Store, run_id: str, size: int) -> str:
    """The ring's name for ``run_id``'s slot now: a free one, else the one saved longest ago;
    recorded at once, so two runs ending together take two names."""
    names = [ring_name(i) for i in range(size)]
    with store._write() as db:
        saved = dict(db.execute("SELECT name, saved_at FROM saved_slots").fetchall())
        name = min(names, key=lambda n: (n in saved, saved.get(n, 0.0)))
        db.execute(
            "INSERT OR REPLACE INTO saved_slots (name, run_id, saved_at) VALUES (?, ?, ?)",
            (name, run_id, time.time()),
        )
    return name


def name_of(store: Store, run_id: str) -> str | None:
    """The name ``run_id``'s slot was saved under, while no later run took it."""
    rows = store._query("SELECT name FROM saved_slots WHERE run_id = ?", (run_id,))
    return str(rows[0][0]) if rows else None


def forget(store: Store, name: str) -> None:
    """The file ``name`` holds no run's slot (the save failed)."""
    with store._write() as db:
        db.execute("DELETE FROM saved_slots WHERE name = ?", (name,))
