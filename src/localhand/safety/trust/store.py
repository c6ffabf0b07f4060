"""Trust in the files that steer localhand, given by the user once for exact content.

localhand reads files outside the sandbox and acts on them: ``localhand.toml``, MCP config
files, task, batch and plan files. Such a file can lie where the model's commands write (the
workspace), so its content is believed only when the user approved that exact content, as
``direnv allow`` does: the file's sha256 is pinned, with a copy of the approved content (to
show a diff when it changes), in localhand's own data directory, which commands can neither
read nor write. Each file is read once: the bytes hashed are the bytes parsed.

- A file the user names (``LOCALHAND_CONFIG``, ``--mcp-config``, ``--task-file``, a batch or
  plan file) is trusted as it is at its first use (``use_named``), unless a recorded run wrote
  it (``provenance``). That, or a change since, localhand shows and asks about at a terminal;
  where nobody can answer it refuses, naming ``localhand trust FILE``.
- A file localhand finds by itself (``./localhand.toml``) is used only once trusted with
  ``localhand trust`` (``use_discovered``); unknown or changed, it is ignored with a warning.

Trust is keyed by the path a file was found at (``found_path``): a symlink to another
project's trusted file is a file of its own, trusted only once its own path is.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from localhand.errors import ConfigError
from localhand.paths import data_dir, private_dir, write_private
from localhand.safety.trust.provenance import found_path, written_by

State = Literal["trusted", "unknown", "changed"]
_asking = True
"""False once this process has said nobody may be asked (``never_ask``)."""


def never_ask() -> None:
    """From now on this process asks nobody about a changed file (``--json``, batch, MCP,
    the dashboard): it refuses it instead."""
    global _asking
    _asking = False


def may_ask() -> bool:
    """Whether a person can answer here: a terminal on both ends, and no ``never_ask``."""
    return _asking and sys.stdin is not None and sys.stdin.isatty() and sys.stderr.isatty()


@dataclass(frozen=True, slots=True)
class Entry:
    """One trusted file: the path it was found at, the sha256 of its approved content, when."""

    path: str
    sha256: str
    trusted_at: float


@dataclass(frozen=True, slots=True)
class Seen:
    """One reading of a file: the bytes to use (never read again) and how they stand."""

    path: Path
    key: str
    """The path it was found at (``found_path``), which its trust is kept under."""
    content: bytes
    sha256: str
    state: State
    previous: bytes | None = None
    """The content last trusted, when it changed and its copy is kept."""
    written_by: tuple[str, ...] = ()
    """The recorded runs that wrote it (``use_named``), as a person reads them."""

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


class TrustStore:
    """The pinned hashes (``index.json``) and approved copies (``copies/SHA256``), kept private
    in ``trust/`` of localhand's data directory (``localhand.paths.data_dir``)."""

    def __init__(self, directory: Path | None = None):
        self.directory = directory if directory is not None else data_dir() / "trust"

    def read(self, path: Path, what: str = "") -> Seen:
        """Read ``path`` (a ``what``, for messages) once and say whether its content is the
        one trusted."""
        key = found_path(path)
        try:
            content = Path(key).read_bytes()
        except OSError as exc:
            named = f"{what} {path}" if what else str(path)
            raise ConfigError(f"cannot read {named}: {exc.strerror or exc}") from None
        digest = hashlib.sha256(content).hexdigest()
        entry = self._index().get(key)
        if entry is None:
            return Seen(Path(path), key, content, digest, "unknown")
        if entry.sha256 == digest:
            return Seen(Path(path), key, content, digest, "trusted")
        return Seen(Path(path), key, content, digest, "changed", self._copy(entry.sha256))

    def trust(self, seen: Seen) -> None:
        """Pin ``seen``'s content as the trusted content of its file."""
        copies = private_dir(self.directory / "copies")
        write_private(copies / seen.sha256, seen.content)
        index = self._index()
        index[seen.key] = Entry(seen.key, seen.sha256, time.time())
        self._save(index)

    def forget(self, path: Path) -> bool:
        """Trust ``path`` no more; False when it was not trusted."""
        index = self._index()
        keys = (found_path(path), os.path.realpath(path), os.path.abspath(path))  # and older keys
        if not [index.pop(key) for key in set(keys) if key in index]:
            return False
        self._save(index)
        return True

    def entries(self) -> list[Entry]:
        return sorted(self._index().values(), key=lambda e: e.path)

    def _index(self) -> dict[str, Entry]:
        try:
            data = json.loads((self.directory / "index.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cannot read localhand's trust list {self.directory / 'index.json'}: {exc}; "
                "remove it and trust your files again (localhand trust FILE)"
            ) from None
        files = data.get("files", {}) if isinstance(data, dict) else {}
        return {
            path: Entry(path, str(item["sha256"]), float(item.get("trusted_at", 0)))
            for path, item in files.items()
            if isinstance(item, dict) and "sha256" in item
        }

    def _save(self, index: dict[str, Entry]) -> None:
        private_dir(self.directory)
        files = {e.path: {"sha256": e.sha256, "trusted_at": e.trusted_at} for e in index.values()}
        text = json.dumps({"files": files}, indent=1, sort_keys=True) + "\n"
        write_private(self.directory / "index.json", text.encode())

    def _copy(self, sha256: str) -> bytes | None:
        try:
            return (self.directory / "copies" / sha256).read_bytes()
        except OSError:
            return None


def trust_hint(path: Path) -> str:
    """The command that reviews and trusts ``path``."""
    import shlex  # loaded only when used

    return f"localhand trust {shlex.quote(str(path))}"


def use_named(
    path: Path,
    what: str,
    *,
    store: TrustStore | None = None,
    ask: Callable[[Seen, str], bool] | None = None,
) -> Seen:
    """``path``, a file the user named, read once: trusted as it is at its first use unless a
    recorded run wrote it; if one did, or it changed since, ``ask`` decides (by default the
    person at the terminal, if any); refused with a ``ConfigError`` otherwise."""
    store = store or TrustStore()
    seen = store.read(path, what)
    if seen.state == "trusted":
        return seen
    if seen.state == "unknown":
        seen = replace(seen, written_by=tuple(written_by(path, seen.key)))
        if not seen.written_by:
            store.trust(seen)
            return seen
    if ask is None and may_ask():
        ask = confirm
    if ask is not None and ask(seen, what):
        store.trust(seen)
        return seen
    said = "was not trusted" if ask is not None else "cannot be asked about here"
    why = "changed since you last trusted it, and the new content"
    if seen.written_by:
        runs = "".join(f"\n  {line}" for line in seen.written_by)
        why = f"was written by the model, so it is not trusted at its first use:{runs}\nIts content"
    raise ConfigError(
        f"{what} {path} {why} {said}: nothing was run. Review it and trust it with: "
        f"{trust_hint(path)}"
    )


def use_discovered(
    path: Path, what: str, warn: Callable[[str], None], *, store: TrustStore | None = None
) -> Seen | None:
    """``path``, a file localhand found by itself, read once: ``None`` (and one warning saying
    how to trust it) unless the user trusted this exact content."""
    seen = (store or TrustStore()).read(path, what)
    if seen.state == "trusted":
        return seen
    why = "is not trusted yet" if seen.state == "unknown" else "changed since you trusted it"
    if os.path.islink(path) and seen.state == "unknown":
        why = f"is a link to {os.path.realpath(path)}, and the link's own path is not trusted"
    warn(
        f"{path} ({what}) {why}, so none of it is used: a file in the project can be written "
        f"by the model. Review and trust it with: {trust_hint(path)}"
    )
    return None


def shown(seen: Seen) -> str:
    """What a person reviews before trusting ``seen``: the diff against the content last
    trusted, else the whole content; control characters written out as text (inert)."""
    import difflib  # loaded only when used

    from localhand.safety.approval.approver import escape  # off load_settings' path

    new = seen.text.splitlines()
    if seen.previous is None:
        lines = [f"  {line}" for line in new] or ["  (empty file)"]
    else:
        old = seen.previous.decode("utf-8", errors="replace").splitlines()
        diff = difflib.unified_diff(old, new, "last trusted", "now", lineterm="")
        lines = list(diff) or ["  (only line endings or encoding changed)"]
    return "\n".join(escape(line) for line in lines)


def confirm(seen: Seen, what: str) -> bool:
    """Show ``seen`` and ask the person at the terminal whether to trust it (default no)."""
    from localhand.safety.approval.approver import escape  # off load_settings' path

    if seen.state == "changed":
        head = f"{what} {escape(str(seen.path))} changed since you last trusted it:"
    elif seen.written_by:
        runs = "".join(f"\n  {escape(line)}" for line in seen.written_by)
        head = f"{what} {escape(str(seen.path))} was written by the model:{runs}\nIt says:"
    else:
        head = f"{what} {escape(str(seen.path))} is not trusted yet. It says:"
    sys.stderr.write(f"\n{head}\n{shown(seen)}\nTrust this content? [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


__all__ = [
    "Entry",
    "Seen",
    "TrustStore",
    "confirm",
    "may_ask",
    "never_ask",
    "shown",
    "trust_hint",
    "use_discovered",
    "use_named",
]
