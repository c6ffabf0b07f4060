"""Secrets taken out of text before it leaves the machine or is kept: ``scrub_text``.

Whatever a tool returns goes to the model (which may be a remote server), into the store and
onto the dashboard. A command can print a secret it found in a file, a URL, a log, or got from
another process, so every tool result and every stored event passes through here. What is
replaced, keeping what makes the text useful (the scheme and host, the variable's name, the
token's prefix) and putting ``[REDACTED]`` where the secret was:

- passwords in URLs of any scheme (``postgresql+psycopg2://u:[REDACTED]@db``, ``redis://:…@``,
  ``mongodb+srv://``), a long token used as a URL's user name, and secret query parameters
  (``?access_token=``, ``&sig=``, ``X-Amz-Signature=``);
- webhook URLs (Slack, Discord, Teams, Zapier, any ``/webhook/<long token>``);
- tokens by their shape: GitHub, GitLab, Slack, OpenAI, Anthropic, AWS key ids, Google, Hugging
  Face, npm, PyPI, Stripe, JWTs, private key blocks;
- ``Authorization:`` headers and ``Bearer …``;
- assignments of secret-named settings: ``DB_PASSWORD=…`` (env files), ``password: …`` (YAML,
  ini), ``"api_key": "…"`` (JSON, code). Code stays readable: ``token = get_token()``,
  ``self.token = token`` or ``password: str`` are references and types, not secrets;
- the literal values of the secret environment variables localhand started with (see
  ``remember_environment``), however a command came to print them.

The shapes are in ``secret_patterns``, which also says how they stay fast (a 16 KB output is
scrubbed in a few hundred microseconds); this module adds the literal values and the walk over
stored data. Nothing is compiled at import: start-up pays nothing for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from localhand.safety.secrets.environment import is_secret
from localhand.safety.secrets.patterns import MARKER, PATTERNS, looks_secret, redact

MIN_LITERAL = 8
"""Shorter environment values are not redacted wherever they appear: too many false hits."""
_NOT_SECRET_NAMES = ("KEYBOARD", "KEYMAP", "TOKENIZER")
"""Names ``is_secret`` counts (over-eagerly, for commands) whose values are ordinary words."""

_literals: set[str] = set()
_literals_sorted: list[str] = []
_environment_read = False


def remember(values: Iterable[str]) -> None:
    """Redact these exact strings wherever they appear from now on (those of at least
    ``MIN_LITERAL`` characters that are not file paths or numbers)."""
    global _literals_sorted
    added = {v.strip() for v in values if _worth_remembering(v)} - _literals
    if added:
        _literals.update(added)
        _literals_sorted = sorted(_literals, key=len, reverse=True)  # longest first


def remember_environment(environ: Mapping[str, str] | None = None) -> None:
    """Remember the values of the secret variables in ``environ`` (default: ``os.environ``
    now), and the passwords inside the URLs among them, so a command that prints one is
    redacted even where no pattern would catch it. ``forget_secrets`` hands its variables
    here; ``scrub_text`` reads ``os.environ`` on first use for library users."""
    global _environment_read
    _environment_read = True
    environ = os.environ if environ is None else environ
    values = []
    for name, value in list(environ.items()):
        if not is_secret(name, value) or any(w in name.upper() for w in _NOT_SECRET_NAMES):
            continue
        values.append(value)
        values.extend(m["pw"] for m in PATTERNS.userinfo.finditer(value) if m["pw"])
    remember(values)


def _worth_remembering(value: str) -> bool:
    value = value.strip()
    # A path (SSH_AUTH_SOCK, GIT_ASKPASS) says where a secret is; it is not one.
    return (
        len(value) >= MIN_LITERAL
        and not value.startswith("/")
        and not value.isdigit()
        and value != MARKER
    )


def scrub_text(text: str) -> str:
    """``text`` with every secret it recognises replaced by ``[REDACTED]`` (see the module)."""
    if not text:
        return text
    if not _environment_read:
        remember_environment()
    text = redact(text)
    for value in _literals_sorted:
        if value in text:
            text = text.replace(value, MARKER)
    return text


def scrub_data(data: Any) -> Any:
    """``data`` (JSON-like: dicts, lists, strings) with every string scrubbed; keys are kept.
    Returns ``data`` itself when nothing changed."""
    if isinstance(data, str):
        return scrub_text(data)
    if isinstance(data, dict):
        items = {key: scrub_data(value) for key, value in data.items()}
        changed = any(items[key] is not value for key, value in data.items())
        return items if changed else data
    if isinstance(data, list | tuple):
        values = [scrub_data(value) for value in data]
        if all(new is old for new, old in zip(values, data, strict=True)):
            return data
        return values if isinstance(data, list) else type(data)(values)
    return data


__all__ = ["MARKER", "looks_secret", "remember", "remember_environment", "scrub_data",
           "scrub_text"]  # fmt: skip
