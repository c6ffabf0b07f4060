"""localhand's own process keeps no secret in its environment once it has started.

A command the model runs can read ``/proc/<pid>/environ`` of any process of the same user,
localhand's included, and the scrubbed environment commands get (``environment``) does not
change what localhand itself holds. ``forget_secrets`` runs right after the command line has
read its settings and:

- removes every secret-looking variable (``environment.is_secret``) from ``os.environ`` and
  from the C library's environment, so no child process inherits it;
- overwrites their ``NAME=value`` bytes in the process's original environment block, which is
  what the kernel shows as ``/proc/<pid>/environ`` (the memory between ``env_start`` and
  ``env_end``, fields 50 and 51 of ``/proc/self/stat``): unsetting a variable only stops libc
  pointing there, the bytes stay. Linux only; elsewhere that step does nothing;
- hands the values to the scrubber, which redacts them wherever a command prints them.

The few variables localhand's own code reads after start-up (``OPENAI_API_KEY`` when the
backend is built, ``OLLAMA_API_KEY`` with each request, a server or proxy URL with a password
in it: ``READ_LATER``) stay readable through ``os.environ`` inside this process only: they leave
the process environment and its block all the same, so neither ``/proc`` nor a child sees
them. Values that are file paths (``SSL_CERT_FILE``, ``SSH_AUTH_SOCK``) say where a secret is,
not what it is, and stay: TLS and git need them.

Never raises: the environment is left as it is wherever a step cannot be done.
"""

from __future__ import annotations

import os
import sys

from localhand.safety.secrets.environment import is_secret
from localhand.safety.secrets.scrub import remember_environment

READ_LATER = frozenset(
    "OPENAI_API_KEY OLLAMA_API_KEY OPENAI_BASE_URL OLLAMA_HOST LOCALHAND_HOST "
    "HTTP_PROXY HTTPS_PROXY ALL_PROXY FTP_PROXY".split()
)
"""Read by localhand's backends after start-up (names compared in upper case, since proxies
are also spelled ``https_proxy``): kept for this process, hidden from /proc and children."""


def forget_secrets() -> dict[str, str]:
    """Take every secret-looking variable out of this process's environment (see the module);
    those of ``READ_LATER`` stay readable in ``os.environ``.

    Returns the variables taken out, name to value, for the scrubber."""
    removed: dict[str, str] = {}
    try:
        for name, value in list(os.environ.items()):
            if not is_secret(name, value) or _is_path(value):
                continue
            removed[name] = value
            if name.upper() in READ_LATER:
                os.unsetenv(name)  # gone from the C environment; os.environ still has it
            else:
                del os.environ[name]  # also unsets it in the C environment
        _wipe_block(removed)
    except Exception:  # start-up goes on, whatever this system's /proc allows
        pass

    remember_environment(removed)
    return removed


def _is_path(value: str) -> bool:
    value = value.strip()
    return value.startswith("/") and not any(c.isspace() for c in value)


def _wipe_block(removed: dict[str, str]) -> None:
    """Zero, in the original environment block, each ``NAME=value`` whose name was removed,
    and any other secret-looking one no longer in the environment (unset earlier by someone
    else: its bytes are still there)."""
    if not sys.platform.startswith("linux"):
        return
    bounds = _block_bounds()
    if bounds is None:
        return
    start, end = bounds
    try:
        with open("/proc/self/environ", "rb") as handle:
            block = handle.read()
    except OSError:
        return
    if len(block) != end - start:  # not the block we think it is: touch nothing
        return
    spans = []
    offset = 0
    for entry in block.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        text_name = name.decode("utf-8", "surrogateescape")
        if sep and (text_name in removed or _stale_secret(text_name, value)):
            spans.append((offset, len(entry)))
        offset += len(entry) + 1
    if spans:
        _zero(start, spans)


def _stale_secret(name: str, value: bytes) -> bool:
    if name in os.environ:
        return False
    text = value.decode("utf-8", "surrogateescape")
    if not is_secret(name, text) or _is_path(text):
        return False
    os.unsetenv(name)  # in case C code kept it: the bytes are about to go
    return True


def _block_bounds() -> tuple[int, int] | None:
    """``env_start`` and ``env_end`` of this process (Linux 3.5 and later)."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            stat = handle.read()
        # The command name (field 2) may hold spaces and parentheses: count from its end.
        fields = stat[stat.rindex(b")") + 2 :].split()
        start, end = int(fields[50 - 3]), int(fields[51 - 3])
    except (OSError, ValueError, IndexError):
        return None
    return (start, end) if 0 < start < end else None


def _zero(base: int, spans: list[tuple[int, int]]) -> None:
    """Write zeros over ``spans`` (offset, length) of this process's memory from ``base``:
    through /proc/self/mem (no import needed), else with ctypes."""
    try:
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            for offset, length in spans:
                mem.seek(base + offset)
                mem.write(bytes(length))
        return
    except OSError:
        pass
    import ctypes  # loaded only when used

    for offset, length in spans:
        ctypes.memset(base + offset, 0, length)


__all__ = ["READ_LATER", "forget_secrets"]
