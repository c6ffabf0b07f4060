"""A small workspace as a gzipped tar, kept with a run so replay starts from the same files.

Only workspaces up to ``MAX_BYTES`` of files (caches and ``.git`` left out, as the change
tracker does) are kept: a recorded run should not copy a whole monorepo into the database.
Extraction uses tarfile's ``data`` filter, so an archive can never write outside its target.

Secret-looking files (``.env``, private keys, ``*.pem``, credentials files, ``.ssh/``, ``.aws/``;
``localhand.safety.risk.paths.is_secret_file`` says which) are left out unless the caller asks
for them: the store outlives the run and is read by the dashboard, and a replay rarely needs
them. The archive's note names what was left out.

localhand's own files are never packed, should they lie in the workspace
(``localhand.paths.own_paths_in``): a copy of the store inside the store helps no replay.
"""

from __future__ import annotations

import builtins
import io
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

from localhand.paths import IGNORED_DIRS, IGNORED_SUFFIXES, own_paths_in
from localhand.safety.risk.paths import is_secret_file

MAX_BYTES = 5 * 1024 * 1024
MAX_FILES = 2000
_NAMED_IN_NOTE = 5


@dataclass(frozen=True, slots=True)
class Archive:
    files: int
    bytes: int
    data: builtins.bytes | None
    """None when the workspace was too big (``note`` says why)."""
    note: str = ""


def pack(root: Path, max_bytes: int = MAX_BYTES, *, include_secrets: bool = False) -> Archive:
    """Archive the workspace's files (symlinks kept as links), or say why not. Secret-looking
    files and directories are left out unless ``include_secrets``."""
    paths: list[str] = []
    secrets: list[str] = []
    total = 0
    own = own_paths_in(root)
    for dirpath, dirnames, filenames in os.walk(root):
        relative = os.path.relpath(dirpath, root)
        prefix = "" if relative == os.curdir else relative + os.sep
        kept_dirs = []
        for name in sorted(d for d in dirnames if d not in IGNORED_DIRS):
            if prefix + name in own.dirs:
                continue
            if not include_secrets and is_secret_file(prefix + name + "/"):
                secrets.append(prefix + name + "/")
            else:
                kept_dirs.append(name)
        dirnames[:] = kept_dirs
        for name in sorted(filenames):
            if name.endswith(IGNORED_SUFFIXES) or prefix + name in own.files:
                continue
            if not include_secrets and is_secret_file(prefix + name):
                secrets.append(prefix + name)
                continue
            path = os.path.join(dirpath, name)
            try:
                total += os.lstat(path).st_size
            except OSError:
                continue
            paths.append(path)
            if total > max_bytes or len(paths) > MAX_FILES:
                note = (
                    f"workspace too big to keep (over {max_bytes // 1024} KiB or "
                    f"{MAX_FILES} files); replay needs --workspace"
                )
                return Archive(len(paths), total, None, note)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        for path in paths:
            try:
                tar.add(path, arcname=os.path.relpath(path, root), recursive=False)
            except OSError:
                continue  # vanished or unreadable: the replay will show it if it mattered
    return Archive(len(paths), total, buffer.getvalue(), _left_out(secrets))


def _left_out(secrets: list[str]) -> str:
    if not secrets:
        return ""
    named = ", ".join(secrets[:_NAMED_IN_NOTE])
    more = f" and {len(secrets) - _NAMED_IN_NOTE} more" if len(secrets) > _NAMED_IN_NOTE else ""
    return f"left out secret-looking files: {named}{more}"


def unpack(data: bytes, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(target, filter="data")
