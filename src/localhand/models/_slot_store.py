"""A llama-server slot's cache written to a file on the server and read back (``POST
/slots/{id}?action=save|restore`` with ``{"filename": ...}``, at its root): refused ``501``
without ``--slot-save-path``; a restore is refused ``400`` when the file is gone or another
model's. Never raises: the caller says what failed, as a warning."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from localhand.models._http import Client, HTTPError


@dataclass(frozen=True, slots=True)
class SlotFile:
    """The tokens the server saved or restored, or why it did not."""

    tokens: int | None = None
    error: str | None = None
    unsupported: bool = False
    """No ``--slot-save-path``: nothing to keep, nothing to warn about."""


def slot_file(root: str, headers: Mapping[str, str], slot: int, action: str, name: str) -> SlotFile:
    """Save slot ``slot`` of the llama-server at ``root`` to the file ``name``, or restore it."""
    client = Client(root, headers)
    try:  # a full 32k-token slot is a few hundred MB to write
        answer = client.request(
            "POST", f"/slots/{slot}?action={action}", {"filename": name}, timeout=120.0,
            connect_timeout=10.0,
        )  # fmt: skip
        body = answer.json()
    except (HTTPError, OSError, ValueError) as exc:
        return SlotFile(error=str(exc) or type(exc).__name__)
    finally:
        client.close()
    body = body if isinstance(body, dict) else {}
    if answer.status == 200:
        return SlotFile(tokens=int(body.get("n_saved" if action == "save" else "n_restored") or 0))
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    return SlotFile(error=str(message or f"HTTP {answer.status}"), unsupported=answer.status == 501)
