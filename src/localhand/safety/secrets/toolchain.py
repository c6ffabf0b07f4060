"""Credentials kept inside a toolchain folder that the sandbox otherwise shows.

A ``PATH`` entry under ``$HOME`` (``~/.cargo/bin``, ``~/.pulumi/bin``, ``~/.fly/bin``) makes
the sandbox show its folder read-only, so the tool runs; but that folder is often also where
the tool keeps its login: ``~/.cargo/credentials.toml``, a registry token in
``~/.cargo/config.toml``, ``~/.pulumi/credentials.json``, an ``access_token`` in
``~/.fly/config.yml``, an ``.npmrc`` or ``pip.conf`` with a password. ``masked`` finds such
files by what they are, not by vendor:

- by name: anything named like a credential, token, secret, key or login file
  (``credentials*``, ``*.token``, ``auth.json``, ``.npmrc``, ``.pypirc``, ``.netrc``,
  ``*.pem``, ``id_*``...), and directories named like a credential store;
- by content: a small configuration file (``*.toml``, ``*.json``, ``*.yml``, ``*.ini``,
  ``*.conf``, ``*rc``, ``config``) with a setting whose name says token, password, secret,
  key or auth, or text the secret scrubber would redact.

The sandbox then binds ``/dev/null`` over each file and an empty directory over each
directory. The walk skips what toolchains keep in bulk (installed versions, packages, caches)
and stops at a depth and a count, so it costs little; it is cached for a minute.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterable

from localhand.safety.secrets.patterns import looks_secret

MAX_DEPTH = 3
MAX_ENTRIES = 4_000
MAX_CONFIG_BYTES = 256 * 1024
CACHE_S = 60.0

_SECRET_NAME = re.compile(
    r"(^|[._-])(credentials?|creds|secrets?|tokens?|auth|passwords?|passwd|apikey|api[_-]key"
    r"|access[_-]tokens?|refresh[_-]tokens?|session)([._-]|$)"
    r"|^\.?(npmrc|pypirc|netrc|_netrc|git-credentials|htpasswd|pgpass|yarnrc\.yml|gemrc)$"
    r"|^(auth|hosts|login)\.(json|ya?ml|toml)$"
    r"|^id_(rsa|dsa|ecdsa|ed25519)"
    r"|\.(pem|key|p12|pfx|jks|keystore|token|kdbx|gpg|asc)$"
    r"|^(pip\.conf|pip\.ini|\.env(\..+)?|kubeconfig|access_tokens\.db|credentials\.db)$",
    re.IGNORECASE,
)
_SECRET_DIR = re.compile(
    r"^\.?(credentials?|creds|secrets?|tokens?|keys|keyring|auth|sessions?|\.?ssh|\.?gnupg)$",
    re.IGNORECASE,
)
_CONFIG_NAME = re.compile(
    r"\.(toml|json|ya?ml|ini|conf|cfg|properties|env)$|rc$|^config$", re.IGNORECASE
)
_SECRET_SETTING = re.compile(
    r"""(?im)^[\s"']*[\w.-]*(token|password|passwd|secret|api[_-]?key|auth|credential)"""
    r"""[\w.-]*["']?\s*[:=]\s*["']?[^\s"'{}\[\]]{6,}"""
)
_BULK = frozenset(
    ("toolchains", "versions", "registry", "git", "node_modules", "site-packages", "lib",
     "lib64", "include", "share", "bin", "libexec", "downloads", "cache", ".cache", "tmp",
     "plugins", "pkg", "src", "target", "man", "doc", "docs", "__pycache__")
)  # fmt: skip
"""Directory names where toolchains keep what they installed: large, and no logins."""

_cache: dict[tuple[str, ...], tuple[float, tuple[str, ...], tuple[str, ...]]] = {}


def masked(folders: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(files, directories)`` holding credentials under the shown toolchain ``folders``
    (real paths), to be hidden."""
    key = tuple(sorted(set(folders)))
    now = time.monotonic()
    kept = _cache.get(key)
    if kept is not None and now - kept[0] < CACHE_S:
        return kept[1], kept[2]
    files: list[str] = []
    dirs: list[str] = []
    budget = [MAX_ENTRIES]
    for folder in key:
        if os.path.isdir(folder):
            _walk(folder, 0, files, dirs, budget)
    _cache[key] = (now, tuple(files), tuple(dirs))
    return tuple(files), tuple(dirs)


def _walk(folder: str, depth: int, files: list[str], dirs: list[str], budget: list[int]) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        budget[0] -= 1
        if budget[0] < 0:
            return
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            if _SECRET_DIR.match(entry.name):
                dirs.append(entry.path)
            elif depth < MAX_DEPTH and entry.name not in _BULK:
                _walk(entry.path, depth + 1, files, dirs, budget)
        elif stat.S_ISREG(info.st_mode) and secret_file(entry.name, entry.path, info.st_size):
            files.append(entry.path)


def secret_file(name: str, path: str, size: int) -> bool:
    """Whether the file ``name`` at ``path`` (``size`` bytes) holds a credential: by its
    name, or, for a small configuration file, by a secret setting in it."""
    if _SECRET_NAME.search(name):
        return True
    if size > MAX_CONFIG_BYTES or not _CONFIG_NAME.search(name):
        return False
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_CONFIG_BYTES).decode("utf-8", "replace")
    except OSError:
        return True  # unreadable here: hide it rather than guess
    if _SECRET_SETTING.search(text):
        return True

    return looks_secret(text)
