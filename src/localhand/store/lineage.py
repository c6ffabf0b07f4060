"""Continued runs in the store: the conversation a run leaves, and the run a run carries on.

``localhand run --continue RUN`` (``localhand.session.continuing``) reads a run's conversation
back and sends it again, unchanged, with the new instructions after it; the new run names its
parent here, and ``show`` and the dashboard say so.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localhand.store.db import Store
    from localhand.types import Message


def save_conversation(
    store: Store, run_id: str, messages: Sequence[Message], collected: dict[str, Any] | None = None
) -> None:
    """Keep ``messages`` (the whole conversation, final reply included) for ``run_id``, and the
    tests its checks ``collected`` at its chain's start (``evidence.reports.Collected.record``)."""
    text = json.dumps(list(messages), ensure_ascii=False, default=str)
    tests = json.dumps(collected) if collected else None
    with store._write() as db:
        db.execute(
            "INSERT OR REPLACE INTO conversations (run_id, messages, collected) VALUES (?, ?, ?)",
            (run_id, text, tests),
        )


def conversation(store: Store, run_id: str) -> tuple[list[Message], dict[str, Any] | None] | None:
    """The conversation ``run_id`` left and the tests its chain's checks collected at the
    chain's start, or None when none was kept (a plan, the simple path, a run from before
    localhand kept them, one that ended before its loop)."""
    rows = store._query("SELECT messages, collected FROM conversations WHERE run_id = ?", (run_id,))
    if not rows:
        return None
    messages, collected = rows[0]
    return json.loads(messages), json.loads(collected) if collected else None


def link_parent(store: Store, run_id: str, parent: str) -> None:
    """Record that ``run_id`` continues ``parent``."""
    with store._write() as db:
        db.execute("UPDATE runs SET continues = ? WHERE id = ?", (parent, run_id))


def next_slot_name(store: Store, size: int) -> str:
    """The next of a ring of names for a saved slot (llama-server can neither list nor delete
    them: ``session.kept_cache``): a free one, else the one saved longest ago."""
    saved = dict(store._query("SELECT name, saved_at FROM saved_slots"))
    names = [f"localhand-slot-{i}.bin" for i in range(size)]
    return min(names, key=lambda n: (n in saved, saved.get(n, 0.0)))


def slot_saved(store: Store, name: str, run_id: str) -> None:
    """``name`` holds ``run_id``'s slot now, no longer an earlier run's."""
    with store._write() as db:
        db.execute("REPLACE INTO saved_slots VALUES (?, ?, ?)", (name, run_id, time.time()))


def saved_slot(store: Store, parent: str | None, task_id: str) -> str | None:
    """The name ``parent``'s slot (else ``task_id``'s latest run's) is saved under, if any."""
    rows = store._query(
        "SELECT s.name FROM saved_slots s JOIN runs r ON r.id = s.run_id WHERE r.id = ?"
        " OR (? IS NULL AND r.task_id = ?) ORDER BY s.saved_at DESC LIMIT 1",
        (parent, parent, task_id),
    )
    return str(rows[0][0]) if rows else None
