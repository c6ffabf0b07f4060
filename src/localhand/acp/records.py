"""What localhand keeps of each ACP session so that an editor can reopen it (``session/load``)
after ``localhand acp`` has exited: ``acp-sessions/<id>.json`` in localhand's data directory
(private, as the store is), with the session's directory, its mode, the store its runs are in
and those runs' ids, oldest first. The conversation itself is the store's: the record only
says which runs make it up (``localhand.acp.replay`` shows them again).

A record is written whole after each prompt, to a new file renamed over the old, so that a
reader (another ``localhand acp`` loading the session) never sees half of one."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from acp import RequestError

from localhand.events import clip
from localhand.paths import data_dir, private_dir, write_private

SESSIONS_DIR = "acp-sessions"
"""The folder of session records in localhand's data directory."""

SESSION_ID = re.compile(r"[0-9a-f]{16}")
"""What ``session/new`` hands out; anything else names no record (nor a path outside)."""


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One ACP session as kept between processes."""

    session_id: str
    workspace: str
    """The session's directory, resolved: a ``session/load`` must name the same one."""
    mode: str
    """``agent`` or ``plan``, as the session last was."""
    store: str
    """The run store the runs are in (``--db``, else the default), resolved."""
    runs: tuple[str, ...] = ()
    """The session's runs, one per prompt, oldest first."""
    title: str = ""
    """Its first prompt's first line, as ``session/list`` names it."""
    updated: float = 0.0
    """When the record was last written (seconds since the epoch), as read back."""


def sessions_dir() -> Path:
    return data_dir() / SESSIONS_DIR


def save_record(record: SessionRecord) -> None:
    """Write ``record`` over the session's earlier one, atomically, mode 0600."""
    folder = private_dir(sessions_dir())
    data = asdict(record)
    del data["updated"]  # the file's own time says it
    text = json.dumps(data, indent=2) + "\n"
    write_private(folder / f"{record.session_id}.json", text.encode("utf-8"))


def title_of(prompt: str) -> str:
    """A session's title: its first prompt's first line that has text, cut to 80 characters."""
    line = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    return clip(line, 80)


def listed(workspace: Path | None, store: str) -> list[SessionRecord]:
    """The sessions kept with runs in ``store`` (in ``workspace`` only, when given), the
    latest first; a record that cannot be read is left out."""
    folder = sessions_dir()
    found = []
    for path in folder.glob("*.json") if folder.is_dir() else ():
        try:
            record = read_record(path.stem)
        except LookupError:
            continue
        if record.store == store and (workspace is None or record.workspace == str(workspace)):
            found.append(record)
    return sorted(found, key=lambda record: record.updated, reverse=True)


def read_record(session_id: str) -> SessionRecord:
    """The record of ``session_id``; a ``LookupError`` that says why there is none to load."""
    path = sessions_dir() / f"{session_id}.json"
    if not SESSION_ID.fullmatch(session_id) or not path.is_file():
        raise LookupError(
            f"no session {session_id} was recorded here (a session is kept once it has had a "
            "prompt); start a new one"
        )
    try:
        updated = path.stat().st_mtime
        data = json.loads(path.read_text(encoding="utf-8"))
        runs = data["runs"]
        if not isinstance(runs, list):
            raise TypeError("runs is not a list")
        return SessionRecord(
            session_id=session_id,
            workspace=str(data["workspace"]),
            mode=str(data.get("mode") or "agent"),
            store=str(data["store"]),
            runs=tuple(str(run) for run in runs),
            title=str(data.get("title") or ""),
            updated=updated,
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = f"the record of session {session_id} ({path}) is unreadable: {exc}"
        raise LookupError(why) from exc


def reopened(session_id: str, workspace: Path, store: str) -> SessionRecord:
    """The record ``session/load`` asks for, when it may be reopened in ``workspace`` (the
    editor's ``cwd``, resolved) with the runs of ``store``; else ``invalid_params`` saying
    why (an unknown id, another directory, another store)."""
    try:
        record = read_record(session_id)
    except LookupError as exc:
        raise RequestError.invalid_params({"sessionId": str(exc)}) from None
    if str(workspace) != record.workspace:
        raise RequestError.invalid_params(
            {"cwd": f"session {session_id} worked in {record.workspace}, not in {workspace}"}
        )
    if record.store != store:
        raise RequestError.invalid_params(
            {
                "sessionId": f"session {session_id}'s runs are in the store {record.store}, "
                f"not in this one ({store}): start localhand acp with --db {record.store} "
                "to reopen it"
            }
        )
    return record
