"""Which settings a workspace file may give: one table, a reason per key.

A ``localhand.toml`` in the workspace (or the directory localhand starts in) can be written by
the model's commands. Trusting it (``localhand trust``) pins its content, but a person
approving a diff can miss one line, so the keys that route data (where the conversation
goes, which roots a page may use) or loosen safety (sandbox, approval, network, secrets,
programs started outside the sandbox) are never taken from such a file, trusted or not: they
come from flags, ``LOCALHAND_*`` variables, the user's own ``config.toml`` or a
``localhand.toml`` kept outside the project (``LOCALHAND_CONFIG``). A value that only
tightens (``approve = "always"``) is kept.

Every field of ``localhand.config.settings.Settings`` is in ``KEYS`` (tests/safety/test_trust.py
fails when a new one is not), besides the tables that are not settings
(``dashboard.workspaces``, ``pool.endpoints``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Key:
    """How a workspace file's value of one setting is treated."""

    from_workspace: bool
    """Taken from a (trusted) workspace file."""
    reason: str
    tightens: Callable[[Any], bool] | None = None
    """For a key not taken: the values that only make a run safer, which are taken."""


def _allowed(reason: str) -> Key:
    return Key(True, reason)


def _withheld(reason: str, tightens: Callable[[Any], bool] | None = None) -> Key:
    return Key(False, reason, tightens)


KEYS: dict[str, Key] = {
    "model": _allowed("which model answers; the server stays the one the user chose"),
    "backend": _withheld(
        "picks the server's protocol and default address: where the conversation is sent"
    ),
    "host": _withheld("the server every prompt, file and command output is sent to"),
    "num_ctx_max": _allowed("memory the user's own server may use for the context"),
    "keep_alive": _allowed("how long the user's server keeps the model loaded"),
    "saved_slots": _allowed("how many runs' caches the user's server keeps on its disk"),
    "think": _allowed("whether the model thinks before it answers"),
    "request_timeout": _allowed("how long one model request may take"),
    "max_reply_tokens": _allowed("the length of one reply"),
    "watch_replies": _allowed("whether replies are read as a stream"),
    "gguf": _withheld("a model file localhand loads and parses outside the sandbox"),
    "tool_mode": _allowed("how tool calls are asked of the server"),
    "approve": _withheld(
        "which commands a person must approve", tightens=lambda value: value == "always"
    ),
    "isolate_network": _withheld(
        "whether commands reach the network", tightens=lambda value: value is True
    ),
    "sandbox": _withheld(
        "where commands run and what they may write",
        tightens=lambda value: value in ("required", "read-only"),
    ),
    "sandbox_read": _withheld(
        "files under $HOME that commands may read", tightens=lambda value: not value
    ),
    "sandbox_limits": _withheld(
        "how much memory, how many processes and how much /tmp a command may use"
    ),
    "sandbox_network": _withheld(
        "whether commands share this machine's network", tightens=lambda value: value == "proxy"
    ),
    "sandbox_allow_hosts": _withheld(
        "hosts commands may reach through the proxy", tightens=lambda value: not value
    ),
    "sandbox_env": _withheld(
        "which of your environment variables commands see", tightens=lambda value: not value
    ),
    "archive_secrets": _withheld(
        "whether secret files are copied into the run store",
        tightens=lambda value: value is False,
    ),
    "daily_token_budget": _withheld("a spending limit the user sets for all projects together"),
    "price_in": _allowed("shown money only"),
    "price_out": _allowed("shown money only"),
    "nudge_limit_per": _allowed("how many unusable replies the run allows before it stops"),
    "instruction_files": _allowed(
        "which project files are read as instructions; each still needs the user's trust"
    ),
    "delegate_share": _allowed("how much of the run's limits a read-only helper may take"),
    "plan_mode": _allowed(
        "how a plan repairs a failed step; every step passes the same approval and sandbox"
    ),
    "think_budget": _allowed("how long a reply may think"),
    "profiles": _allowed("how the model is prompted and its replies read"),
    "mcp_servers": _withheld(
        "programs started outside the sandbox, given ${VAR} secrets, and servers sent tool calls"
    ),
    "hooks": _withheld("commands localhand runs on its own at every tool call and run's end"),
    "otel": _withheld(
        "sends what each run does to the tracing backend of the program localhand runs in",
        tightens=lambda value: value is False,
    ),
    "otel_content": _withheld(
        "puts prompts, answers and file contents into the traces sent to that backend",
        tightens=lambda value: value is False,
    ),
    "dashboard.workspaces": _withheld("the roots a page-started task may use"),
    "pool.endpoints": _withheld("the servers a batch sends its conversations to"),
}
PROVENANCE = frozenset(("config_file", "from_file", "user_file", "sources"))
"""Fields of ``Settings`` that say where settings came from: not settings themselves."""


def withheld(name: str, value: Any) -> bool:
    """Whether a workspace file's ``value`` of setting ``name`` is not taken."""
    key = KEYS.get(name)
    if key is None:  # not classified: not taken (tests keep KEYS complete)
        return True
    if key.from_workspace:
        return False
    return not (key.tightens is not None and key.tightens(value))


def without_withheld(
    values: dict[str, Any], path: Path, warn: Callable[[str], None], also: list[str]
) -> dict[str, Any]:
    """``values`` read from the workspace file ``path`` without the keys such a file may not
    give (``also``: those left unread); ``warn`` hears which, once."""
    dropped = sorted(
        {*also, *(name for name, value in values.items() if name in KEYS and withheld(name, value))}
    )
    if dropped:
        only_there = " (hooks: there only)" if "hooks" in dropped else ""
        warn(
            f"{path} is in the project, where the model can write, so these of its settings "
            f"are not used: {explained(dropped)}. Give them as flags, LOCALHAND_* variables, "
            f"or in your own ~/.config/localhand/config.toml{only_there}."
        )
    return {name: value for name, value in values.items() if name not in dropped}


def explained(names: list[str]) -> str:
    """``host (the server ...), sandbox (...)``: the keys and why they are not taken."""
    return ", ".join(f"{name} ({KEYS[name].reason})" for name in names if name in KEYS)


__all__ = ["KEYS", "PROVENANCE", "Key", "explained", "withheld", "without_withheld"]
