"""What the approval question says an MCP tool's call does.

A call goes to a program outside the sandbox, so under ``--approve dangerous`` it is asked
about unless the server is trusted (``tools.McpGate``). What it is *labelled* depends on what
the tool does: one that only reads is ``moderate``, one that may change things ``dangerous``.
The server says so in the tool's annotations (MCP's ``readOnlyHint``, ``destructiveHint``);
where it says nothing, the tool's name does (``get_current_time``, ``git_status``,
``list_issues`` read; ``delete_file`` and ``search_and_replace`` do not). The server's word
comes first: a tool it marks as not read-only is never called a reader for its name.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from localhand.safety.risk.classify import Risk, RiskLevel

READ_WORDS = frozenset(
    "get read list search find fetch query show describe view lookup look stat stats status "
    "log logs diff count inspect info head cat ls tree grep browse check peek explain "
    "current time now whoami version schema".split()
)
"""Words in a tool's name that say it reads."""
WRITE_WORDS = frozenset(
    "write create update set delete remove rm del put post patch push commit add edit move "
    "mv rename run exec execute eval send kill drop reset apply install uninstall merge "
    "checkout switch upload insert modify replace close open start stop restart deploy "
    "publish approve revert rebase tag branch init clone pull sync save store upsert "
    "append clear purge destroy archive assign invite mark submit trigger call do "
    "shell command".split()
)
"""Words in a tool's name that say it may change something; one of them outweighs any reader."""
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


class CallLabel(NamedTuple):
    level: RiskLevel
    what: str
    """What the call does, after "which": ``only reads (the server marks it read-only)``."""


def call_label(tool: str, annotations: Any) -> CallLabel:
    """The label of a call to ``tool``, from the server's ``annotations`` (the MCP SDK's
    ``ToolAnnotations``, or None), else its name."""
    read_only = getattr(annotations, "read_only_hint", None)
    if getattr(annotations, "destructive_hint", None) is True and read_only is not True:
        return CallLabel("dangerous", "may delete or overwrite things, as the server marks it")
    if read_only is True:
        return CallLabel("moderate", "only reads, as the server marks it (readOnlyHint)")
    if read_only is False:
        return CallLabel("dangerous", "may change things, as the server marks it")
    words = {word.lower() for word in _WORDS.findall(tool)}
    if words & READ_WORDS and not words & WRITE_WORDS:
        return CallLabel("moderate", "reads, by its name (the server does not say)")
    return CallLabel("dangerous", "may change things (the server does not say it only reads)")


def call_risk(server: str, tool: str, annotations: Any, *, always: bool) -> Risk:
    """The ``Risk`` the approval question shows for a call to ``tool`` of ``server``;
    ``always``: asked because of ``--approve always``, not because of what it does."""
    label = call_label(tool, annotations)
    if always:
        why = f"calls {tool}, which {label.what}, of the MCP server '{server}' (--approve always)"
    else:
        why = (
            f"calls {tool}, which {label.what}, of the MCP server '{server}', a program outside "
            'the sandbox (trust = "allow" in its entry skips this question)'
        )
    return Risk(label.level, (why,), action=f"call a tool of the MCP server '{server}'")


__all__ = ["CallLabel", "call_label", "call_risk"]
