"""A llama-server slot's cache written to a file and read back (``POST /slots/{id}?action=save``
and ``?action=restore`` with ``{"filename": ...}``, at the server's root), so that a run that
continues another reuses its conversation even after other work evicted that slot.

The server does this only when started with ``--slot-save-path DIR`` (the files go there);
without it every slot action is refused ``501``. A restore answers ``400`` when the file is
missing or was written by another model. Nothing here raises: a kept cache is an
optimisation, and the caller says what failed as a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from localhand.models._http import Client, HTTPError

SLOT_FILE_TIMEOUT = 120.0
"""Seconds a save or restore may take: a full 32k-token slot is a few hundred MB on disk."""


@dataclass(frozen=True, slots=True)
class SlotFile:
    """What the server did with a slot file: the tokens it saved or restored, or why not."""

    tokens: int | None = None
    error: str | None = None
    unsupported: bool = False
    """The server has no ``--slot-save-path``: nothing to warn about, nothing to keep."""


def slot_file(
    root: str,
    headers: Mapping[str, str],
    slot: int,
    action: Literal["save", "restore"],
    filename: str,
) -> SlotFile:
    """Save slot ``slot`` of the llama-server at ``root`` to ``filename``, or restore it."""
    client = Client(root, headers)
    try:
        answer = client.request(
            "POST",
            f"/slots/{slot}?action={action}",
            {"filename": filename},
            timeout=SLOT_FILE_TIMEOUT,
            connect_timeout=10.0,
        )
    except (HTTPError, OSError) as exc:
        return SlotFile(error=str(exc) or type(exc).__name__)
    finally:
        client.close()
    try:
        data = answer.json()
    except ValueError:  # a proxy's error page, say: its status still says what happened
        data = None
    body = data if isinstance(data, dict) else {}
    if answer.status == 200:
        tokens = body.get("n_saved" if action == "save" else "n_restored")
        return SlotFile(tokens=tokens if isinstance(tokens, int) else 0)
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    return SlotFile(error=str(message or f"HTTP {answer.status}"), unsupported=answer.status == 501)
