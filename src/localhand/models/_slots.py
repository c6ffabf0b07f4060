"""Slot affinity on llama-server: each conversation keeps one slot for its whole run.

llama-server serves ``--parallel N`` requests at once, each in a slot with its own KV cache.
Unpinned, a request goes to the idle slot whose cached prompt looks most like it (or the one
idle longest), so two tasks running side by side can take each other's slot and each then
prefills its whole history again, every turn. A request that names ``id_slot`` is served in
that slot (waiting for it when busy), so the conversation's prefix stays cached there.

Each backend (one task, or one plan's brain) claims a slot at its first request and keeps it
until closed; the slot chosen is the least held one of the server's ``total_slots``
(``GET /props``, at the server's root), so tasks on one server spread over its slots. The
claims are shared by every backend in this process, per server. A server without ``/props``
(vLLM, LM Studio, Ollama's ``/v1``) publishes no slots: nothing is pinned there.

``slot_file`` saves a slot's cache to a file on the server, or restores it (``--slot-save-path``;
without it, ``501``; a restore of a file gone or another model's, ``400``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from localhand.models._common import positive
from localhand.models._http import Client, HTTPError
from localhand.models._served_context import root_of

__all__ = ["SlotFile", "claim", "release", "root_of", "slot_file"]

_lock = threading.Lock()
_held: dict[str, list[int]] = {}
"""Per server root: how many backends hold each of its slots."""


def claim(base_url: str, props: Callable[[], dict[str, Any] | None]) -> int | None:
    """A slot of the server at ``base_url`` for one more holder: the least held one; None
    when the server publishes no slots (``props``: its ``/props``, read when needed). Never
    raises: pinning is an optimisation."""
    root = root_of(base_url)
    with _lock:
        counts = _held.get(root)
    if counts is None or not any(counts):  # nobody holds one: ask again (a restarted server)
        total = published_total(props())
        with _lock:
            counts = _held.get(root)
            if counts is None or not any(counts):
                counts = _held[root] = [0] * (total or 0)
    with _lock:
        if not counts:
            return None
        slot = min(range(len(counts)), key=lambda i: (counts[i], i))
        counts[slot] += 1
        return slot


def release(base_url: str, slot: int) -> None:
    """Give back a slot ``claim`` handed out."""
    with _lock:
        counts = _held.get(root_of(base_url))
        if counts and 0 <= slot < len(counts) and counts[slot] > 0:
            counts[slot] -= 1


def published_total(props: dict[str, Any] | None) -> int | None:
    """llama-server's ``total_slots`` (its ``--parallel``) in its ``/props``, or None when it
    does not say."""
    return positive(props.get("total_slots")) if props else None


@dataclass(frozen=True, slots=True)
class SlotFile:
    """The tokens the server saved or restored, or why it did not."""

    tokens: int | None = None
    error: str | None = None
    unsupported: bool = False
    """No ``--slot-save-path``: nothing to keep, nothing to warn about."""


def slot_file(root: str, headers: Mapping[str, str], slot: int, action: str, name: str) -> SlotFile:
    """Save slot ``slot`` of the llama-server at ``root`` to the file ``name``, or restore it;
    never raises (the caller says what failed, as a warning)."""
    try:  # a full 32k-token slot is a few hundred MB to write
        with Client(root, headers) as client:
            answer = client.request(
                "POST", f"/slots/{slot}?action={action}", {"filename": name}, timeout=120.0,
                connect_timeout=10.0,
            )  # fmt: skip
        body = answer.json()
    except (HTTPError, OSError, ValueError) as exc:
        return SlotFile(error=str(exc) or type(exc).__name__)
    body = body if isinstance(body, dict) else {}
    if answer.status == 200:
        return SlotFile(tokens=int(body.get("n_saved" if action == "save" else "n_restored") or 0))
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    return SlotFile(error=str(message or f"HTTP {answer.status}"), unsupported=answer.status == 501)
