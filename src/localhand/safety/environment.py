"""The environment a model-written command gets: no secrets, nothing that waits for a person.

A command the model writes can print its environment into the conversation (and so into logs,
the dashboard and the store) or send it anywhere. So variables whose names say they hold a
secret (KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL, AUTH...) or whose values look like one
(``ghp_…``, ``sk-…``, ``AKIA…``, a URL with a password of any scheme, a webhook URL: whatever
the patterns of ``localhand.safety.secret_patterns`` redact) are removed. PATH, HOME, LANG, the
locale and the like always stay; ``keep`` names more to pass through on purpose.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from localhand.safety.secret_patterns import looks_secret

QUIET_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    "TERM": "dumb",
    "GIT_TERMINAL_PROMPT": "0",
    # Without these, `git commit` opens an editor and apt asks questions: both would hang.
    "GIT_EDITOR": "true",
    "EDITOR": "true",
    "VISUAL": "true",
    "DEBIAN_FRONTEND": "noninteractive",
    "NO_COLOR": "1",
    # Interleave a Python program's stdout and stderr in the order they were written.
    "PYTHONUNBUFFERED": "1",
}
"""Overrides for every command: nothing waits for a person."""

SECRET_WORDS = (
    "KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "PASS", "CREDENTIAL",
    "AUTH", "PRIVATE", "COOKIE", "SIGNATURE", "JWT", "BEARER", "SESSION_ID", "DSN",
)  # fmt: skip
"""A variable whose name contains one of these (case-insensitive) is removed."""
_SECRET_NAME_PARTS = frozenset(("PWD", "PAT", "CERT", "CREDS"))
"""Whole ``_``-separated parts of a name that mark a secret (``MYSQL_PWD``, ``GH_PAT``)."""
_NOT_AUTH = frozenset(("AUTHOR", "AUTHORS"))
_SECRET_VALUE_PREFIXES = (
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-",
    "xoxr-", "sk-", "sk_live_", "rk_live_", "AKIA", "ASIA", "hf_", "npm_", "pypi-", "AIza",
    "ya29.", "-----BEGIN",
)  # fmt: skip
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
"""A URL scheme as RFC 3986 has it: ``postgresql+psycopg2`` and ``mongodb+srv`` included."""
ALWAYS_KEEP = frozenset(
    "PATH HOME LANG LANGUAGE USER LOGNAME SHELL TERM TMPDIR TEMP TMP TZ PWD OLDPWD SHLVL "
    "HOSTNAME VIRTUAL_ENV CONDA_PREFIX PYTHONPATH XDG_RUNTIME_DIR XDG_CONFIG_HOME "
    "XDG_DATA_HOME XDG_CACHE_HOME".split()
)
"""Never removed, whatever they contain: commands need them to work at all."""


def is_secret(name: str, value: str) -> bool:
    """True when the variable ``name=value`` looks like it holds a secret."""
    upper = name.upper()
    if upper in ALWAYS_KEEP or upper.startswith("LC_"):
        return False
    parts = upper.split("_")
    # GIT_AUTHOR_NAME names a person, not a credential (AUTHORIZATION still counts).
    words = "_".join(part for part in parts if part not in _NOT_AUTH)
    if any(word in words for word in SECRET_WORDS):
        return True
    if _SECRET_NAME_PARTS & set(parts) - {upper}:
        return True
    stripped = value.strip()
    if stripped.startswith(_SECRET_VALUE_PREFIXES):
        return True
    # scheme://user:password@host, of any scheme (postgresql+psycopg2, mongodb+srv, redis,
    # amqps): a database or proxy URL with its password in it.
    scheme, sep, rest = stripped.partition("://")
    userinfo = rest.split("/", 1)[0].rpartition("@")[0]
    if sep and _SCHEME.fullmatch(scheme) and ":" in userinfo:
        return True
    # Anything else the text scrubber would redact: webhook URLs, tokens inside a longer value.
    return looks_secret(stripped)


def scrub(environ: Mapping[str, str], keep: Iterable[str] = ()) -> dict[str, str]:
    """``environ`` without the variables that look like secrets (``keep`` names exceptions)."""
    kept = set(keep)
    return {k: v for k, v in environ.items() if k in kept or not is_secret(k, v)}


def command_environment(
    extra: Mapping[str, str] | None = None,
    *,
    keep: Iterable[str] = (),
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a command: ``base`` (default ``os.environ``) scrubbed, then
    ``QUIET_ENV``, then ``extra``, which is the caller's and passes unchecked."""
    return {**scrub(os.environ if base is None else base, keep), **QUIET_ENV, **(extra or {})}
