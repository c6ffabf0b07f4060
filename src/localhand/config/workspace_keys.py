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

    reason: str
    """What the key decides: why it is, or is not, taken."""
    taken: Callable[[Any], bool] = lambda value: False
    """The values taken from a (trusted) workspace file: every one (``ANY``), none, or for a
    key that routes data or loosens safety only those that make a run safer."""


def ANY(value: Any) -> bool:
    """Every value: a key that neither routes data nor loosens safety."""
    return True


KEYS: dict[str, Key] = {
    "model": Key("which model answers; the server stays the one the user chose", ANY),
    "backend": Key(
        "picks the server's protocol and default address: where the conversation is sent"
    ),
    "host": Key("the server every prompt, file and command output is sent to"),
    "num_ctx_max": Key("memory the user's own server may use for the context", ANY),
    "keep_alive": Key("how long the user's server keeps the model loaded", ANY),
    "saved_slots": Key("how many runs' caches the user's server keeps on its disk", ANY),
    "think": Key("whether the model thinks before it answers", ANY),
    "request_timeout": Key("how long one model request may take", ANY),
    "max_reply_tokens": Key("the length of one reply", ANY),
    "watch_replies": Key("whether replies are read as a stream", ANY),
    "gguf": Key("a model file localhand loads and parses outside the sandbox"),
    "tool_mode": Key("how tool calls are asked of the server", ANY),
    "approve": Key("which commands a person must approve", lambda value: value == "always"),
    "isolate_network": Key("whether commands reach the network", lambda value: value is True),
    "sandbox": Key(
        "where commands run and what they may write",
        lambda value: value in ("required", "read-only"),
    ),
    "sandbox_read": Key("files under $HOME that commands may read", lambda value: not value),
    "sandbox_limits": Key(
        "how much memory, how many processes and how much /tmp a command may use"
    ),
    "sandbox_network": Key(
        "whether commands share this machine's network", lambda value: value == "proxy"
    ),
    "sandbox_allow_hosts": Key(
        "hosts commands may reach through the proxy", lambda value: not value
    ),
    "sandbox_env": Key("which of your environment variables commands see", lambda value: not value),
    "archive_secrets": Key(
        "whether secret files are copied into the run store",
        lambda value: value is False,
    ),
    "daily_token_budget": Key("a spending limit the user sets for all projects together"),
    "price_in": Key("shown money only", ANY),
    "price_out": Key("shown money only", ANY),
    "nudge_limit_per": Key("how many unusable replies the run allows before it stops", ANY),
    "instruction_files": Key(
        "which project files are read as instructions; each still needs the user's trust", ANY
    ),
    "delegate_share": Key("how much of the run's limits a read-only helper may take", ANY),
    "max_jobs": Key("how many commands may run at once in the background", lambda n: n <= 4),
    "plan_mode": Key(
        "how a plan repairs a failed step; every step passes the same approval and sandbox", ANY
    ),
    "think_budget": Key("how long a reply may think", ANY),
    "profiles": Key("how the model is prompted and its replies read", ANY),
    "mcp_servers": Key(
        "programs started outside the sandbox, given ${VAR} secrets, and servers sent tool calls"
    ),
    "hooks": Key("commands localhand runs on its own at every tool call and run's end"),
    "otel": Key(
        "sends what each run does to the tracing backend of the program localhand runs in",
        lambda value: value is False,
    ),
    "otel_content": Key(
        "puts prompts, answers and file contents into the traces sent to that backend",
        lambda value: value is False,
    ),
    "dashboard.workspaces": Key("the roots a page-started task may use"),
    "pool.endpoints": Key("the servers a batch sends its conversations to"),
}
PROVENANCE = frozenset(("config_file", "from_file", "user_file", "sources"))
"""Fields of ``Settings`` that say where settings came from: not settings themselves."""


def withheld(name: str, value: Any) -> bool:
    """Whether a workspace file's ``value`` of setting ``name`` is not taken."""
    key = KEYS.get(name)
    # Not classified: not taken (tests keep KEYS complete).
    return key is None or not key.taken(value)


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
