"""llama-server's slot actions (``POST /slots/{id}?action=save|restore|erase``), as the real
server answers them: refused ``501`` without ``--slot-save-path``; with it, ``400`` for an
unknown action, a body without ``filename``, a name with a path in it, or (restore) a file
that is not there; else what was saved or restored. The files are kept in memory."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

NOT_SUPPORTED = "This server does not support slots action. Start it with `--slot-save-path`"
NOT_RESTORED = "Unable to restore slot: No available space in KV cache or invalid slot save file"


def slot_action(
    path: str, body: Any, saving: bool, files: dict[str, int], held: int
) -> tuple[int, dict[str, Any]]:
    """The status and JSON answer to ``path``; ``files``: the saved files and their tokens
    (changed in place); ``held``: the tokens the slot holds now."""
    if not saving:
        return 501, _error(501, NOT_SUPPORTED, "not_supported_error")
    parts = urlsplit(path)
    slot = int(parts.path.rsplit("/", 1)[-1] or 0)
    action = (parse_qs(parts.query).get("action") or [""])[0]
    if action == "erase":
        return 200, {"id_slot": slot, "n_erased": held}
    if action not in ("save", "restore"):
        return 400, _error(400, "Invalid action")
    name = body.get("filename") if isinstance(body, dict) else None
    if not isinstance(name, str):
        return 400, _error(400, "[json.exception.out_of_range.403] key 'filename' not found")
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        return 400, _error(400, "Invalid filename")
    if action == "save":
        files[name] = held
        found = {"n_saved": held, "n_written": held * 18_000, "timings": {"save_ms": 0.4}}
        return 200, {"id_slot": slot, "filename": name, **found}
    if name not in files:
        return 400, _error(400, NOT_RESTORED)
    found = {"n_restored": files[name], "n_read": files[name] * 18_000}
    return 200, {"id_slot": slot, "filename": name, **found, "timings": {"restore_ms": 0.3}}


def _error(code: int, message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "type": kind}}
