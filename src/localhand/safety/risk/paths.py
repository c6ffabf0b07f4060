"""Where a path in a command points, as far as the risk classifier is concerned.

The command runs in the workspace, so relative paths start there (or wherever an earlier
``cd`` went). Symlinks that exist are followed where the command would follow them, so a link
inside the workspace that points at ``/etc`` counts as ``/etc``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from localhand.safety.risk.shellsyntax import Word

Kind = str
"""``inside``, ``workspace`` (the root itself), ``git`` (inside ``.git``), ``temp``,
``outside``, ``home`` (the home directory itself), ``system``, ``root`` (``/``), ``device``,
``network`` (``/dev/tcp/…``), ``null`` (``/dev/null`` and the like), ``unknown``."""

SYSTEM_DIRS = frozenset(
    "/bin /boot /dev /etc /home /lib /lib32 /lib64 /libx32 /media /mnt /opt /proc /root /run "
    "/sbin /snap /srv /sys /usr /var /tmp /var/tmp /Applications /Library /System /Users "
    "/Volumes /private".split()
)
_TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
_HARMLESS_DEVICES = frozenset(
    "/dev/null /dev/zero /dev/stdin /dev/stdout /dev/stderr /dev/tty /dev/random "
    "/dev/urandom /dev/full".split()
)
SECRET_PATHS = (
    ".ssh/",
    ".aws/",
    ".gnupg/",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".kube/config",
    ".config/gh/",
    ".npmrc",
    ".pypirc",
    ".password-store/",
    "/etc/shadow",
    "/etc/sudoers",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
)
"""Path fragments of files that hold credentials: a fragment ending in ``/`` is a directory."""
SECRET_FILE_NAMES = (
    ".env",
    ".env.*",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.keystore",
    "*.jks",
    "*.kdbx",
    "id_dsa",
    "credentials",
    "*credentials*.json",
    ".pgpass",
)
"""More names (globs, matched case-insensitively against a file's own name) of files that hold
credentials, for ``is_secret_file``. Not used on command words by ``is_secret``: ``curl --cacert
ca.pem https://…`` would become "reads credentials and uses the network", asked every time."""
NOT_SECRET_FILE_NAMES = (".env.example", ".env.sample", ".env.template", ".env.dist")
"""Templates of ``.env`` files: committed to repositories with placeholders in them, and what
a task that adds a setting edits, so they are not treated as secrets."""
_GLOB = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class Place:
    kind: Kind
    shown: str
    """The path as a reason shows it: workspace-relative, ``~/…`` or absolute."""


@dataclass(slots=True)
class Where:
    """What a path is resolved against: the workspace, the current directory, the home."""

    workspace: Path
    home: str
    cwd: PurePosixPath | None = None
    """None after a ``cd`` to somewhere only known at run time."""

    def __post_init__(self) -> None:
        if self.cwd is None:
            self.cwd = PurePosixPath(self.workspace)

    def chdir(self, word: Word | None) -> None:
        """Follow ``cd``: to the word's directory, home without one, unknown if dynamic."""
        if word is None or word.text in ("", "~"):
            self.cwd = PurePosixPath(self.home)
        elif word.leading_dynamic or word.text == "-":
            self.cwd = None
        elif word.text.startswith("/"):
            self.cwd = PurePosixPath(os.path.normpath(word.text))
        elif self.cwd is not None:
            self.cwd = PurePosixPath(os.path.normpath(self.cwd / word.text))

    def locate(self, word: Word, *, follow: bool = True) -> Place:
        """Where ``word`` points. ``follow``: resolve a final symlink (writes, chmod), or not
        (``rm`` deletes the link itself unless the path ends in ``/``)."""
        text = word.text
        if word.leading_dynamic or (self.cwd is None and not text.startswith("/")):
            return Place("unknown", text)
        glob_at = next((i for i, c in enumerate(text) if c in _GLOB), -1)
        pattern = ""
        if glob_at >= 0:
            base = text[: text.rfind("/", 0, glob_at) + 1]
            pattern = text[len(base) :]
            everything = pattern.rstrip("/") in ("*", ".*", "*.*", ".[!.]*", "*/")
            text = (base or ".").rstrip("/") + ("/" if everything else "/x")
            follow, pattern = True, "" if everything else pattern
        absolute = os.path.normpath(os.path.join(str(self.cwd or "/"), text))
        if follow or text.endswith("/"):
            absolute = _real(absolute)
        else:
            absolute = os.path.join(_real(os.path.dirname(absolute)), os.path.basename(absolute))
        place = self._kind(absolute)
        if pattern:  # show the pattern, not the stand-in for what it matches
            return Place(place.kind, os.path.join(os.path.dirname(place.shown), pattern))
        return place

    def _kind(self, path: str) -> Place:
        workspace, home = str(self.workspace), self.home.rstrip("/") or "/"
        if path in _HARMLESS_DEVICES or path.startswith(("/dev/fd/", "/proc/self/fd/")):
            return Place("null", path)
        if path.startswith(("/dev/tcp/", "/dev/udp/")):
            return Place("network", path)
        if path.startswith("/dev/") and not path.startswith("/dev/shm/"):
            return Place("device", path)
        if path == "/":
            return Place("root", "/")
        if path == home:
            return Place("home", "~")
        if path == workspace:
            return Place("workspace", ".")
        if _under(path, workspace) and workspace != "/":
            rel = os.path.relpath(path, workspace)
            kind = "git" if ".git" in PurePosixPath(rel).parts else "inside"
            return Place(kind, rel)
        shown = "~" + path[len(home) :] if _under(path, home) and home != "/" else path
        if path in SYSTEM_DIRS or os.path.dirname(path) == "/":
            return Place("system", shown)
        temp = next(
            (d for d in (*_TEMP_DIRS, os.environ.get("TMPDIR")) if d and _under(path, d)), None
        )
        if temp is not None and not _under(workspace, temp):  # else a neighbour of the workspace
            return Place("temp", shown)
        if any(_under(path, directory) for directory in SYSTEM_DIRS - {"/home", "/Users"}):
            return Place("system", shown)
        return Place("outside", shown)


def is_secret(text: str) -> bool:
    """True when ``text`` (a word of a command) names a file that typically holds credentials."""
    return any(fragment in text for fragment in SECRET_PATHS)


def is_secret_file(relpath: str) -> bool:
    """True when the file (or, with a trailing ``/``, the directory) at ``relpath`` typically
    holds credentials: it is in a directory of ``SECRET_PATHS`` (``.ssh/``, ``.aws/``...),
    its path ends with one of their files (``.netrc``, ``.kube/config``...), or its name
    matches ``SECRET_FILE_NAMES`` and not ``NOT_SECRET_FILE_NAMES``. Matches whole path
    components only: ``my.ssh.txt`` and ``keys.py`` are not secrets."""
    path = "/" + relpath.replace(os.sep, "/").lower().lstrip("/")
    for fragment in SECRET_PATHS:
        if fragment.endswith("/"):
            if "/" + fragment.lstrip("/") in path + "/":
                return True
        elif path.endswith("/" + fragment.lstrip("/")):
            return True
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if path.endswith("/") or any(fnmatchcase(name, p) for p in NOT_SECRET_FILE_NAMES):
        return False
    return any(fnmatchcase(name, pattern) for pattern in SECRET_FILE_NAMES)


def _under(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip("/") + "/")


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path
