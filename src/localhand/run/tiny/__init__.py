"""The tiny-model policy the agent holds (see ``policy``): a short prompt, a few tools, and a
per-turn reply schema of the calls that can work, learnt from tool calls and their results.

Loaded only for a model that declares itself tiny: every other run's start-up skips it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localhand.run.tiny.policy import TinyPolicy


def tiny_policy(
    tiny: bool,
    workspace: Path,
    task: str,
    definitions: Sequence[Mapping[str, Any]],
    checks: Sequence[object],
) -> TinyPolicy | None:
    """The policy for a model that declares itself ``tiny``, else ``None`` (see
    ``localhand.run.tiny.policy.checked_policy``)."""
    if not tiny:
        return None
    from localhand.run.tiny.policy import checked_policy  # off the first request's path

    return checked_policy(workspace, task, definitions, checks)
