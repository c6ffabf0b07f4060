"""Running one hook: the call's path and tool in its environment (``hooks.placeholders``), the
event as JSON on its stdin, in the same sandbox and network rules as the model's commands,
within its time limit."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localhand.errors import ToolError
from localhand.hooks.config import Hook
from localhand.hooks.placeholders import PATH_VARIABLE, TOOL_VARIABLE, expanded
from localhand.safety.approval.approver import Approver
from localhand.tools.deadline import remaining_s
from localhand.tools.shell import run_shell

OUTPUT_CHARS = 4_000
"""Of a hook's output, what is kept (its head and tail): what the model reads after a call."""


@dataclass(frozen=True, slots=True)
class HookOutcome:
    """What one hook did."""

    hook: Hook
    command: str
    """The command line as it ran."""
    exit_code: int | None
    """None when it timed out or could not start."""
    timed_out: bool
    output: str
    """Its stdout, then its stderr, cut to about ``OUTPUT_CHARS``."""
    stderr: str
    duration_ms: int

    @property
    def blocks(self) -> bool:
        """A ``pre_tool`` hook that exited 2: the call must not run."""
        return self.hook.kind == "pre_tool" and self.exit_code == 2 and not self.timed_out

    @property
    def failed(self) -> bool:
        return self.timed_out or self.exit_code != 0

    def status(self) -> str:
        """``exit 1``, ``timed out after 10 s``, ``could not run``: for the model and the view."""
        if self.timed_out:
            return f"timed out after {self.hook.timeout_s:g} s and was killed"
        if self.exit_code is None:
            return "could not run"
        return f"exit {self.exit_code}"


def hook_environment(hook: Hook, tool: str | None, path: str | None) -> dict[str, str]:
    """A hook's kind, and the call's path (``./`` before a ``-``: never an option) and tool."""
    shown_path = (path or "").replace("\0", "")  # no environment holds a NUL
    if shown_path.startswith("-"):
        shown_path = "./" + shown_path
    return {"LOCALHAND_HOOK": hook.kind, PATH_VARIABLE: shown_path, TOOL_VARIABLE: tool or ""}


def run_hook(
    hook: Hook,
    event: dict[str, Any],
    workspace: Path,
    *,
    tool: str | None = None,
    path: str | None = None,
    isolate_network: bool = False,
    approver: Approver | None = None,
) -> HookOutcome:
    """Run ``hook`` in ``workspace`` with ``event`` as JSON on its stdin. Never raises for the
    hook's sake: a sandbox that cannot be had (``sandbox = "required"`` where bubblewrap
    cannot run) is an outcome that could not run, and the model is told."""
    command = expanded(hook.command)  # checked when the configuration was read
    timeout = hook.timeout_s
    left = remaining_s()  # inside a tool call: the run's wall clock bounds it too
    if left is not None:
        timeout = max(min(timeout, left), 0.1)
    started = time.monotonic()
    data = (json.dumps(event, ensure_ascii=False, default=str) + "\n").encode()
    try:
        done = run_shell(
            command,
            workspace,
            timeout_s=timeout,
            head_bytes=OUTPUT_CHARS // 2,
            tail_bytes=OUTPUT_CHARS // 2,
            env=hook_environment(hook, tool, path),
            isolate_network=isolate_network,
            approver=approver,
            stdin=data,
            split_stderr=True,
        )
    except (ToolError, OSError) as error:  # no sandbox to be had, no process to start
        said = f"the hook could not run: {error}"
        return HookOutcome(hook, command, None, False, said, said, _ms(started))
    output = "\n".join(part.rstrip("\n") for part in (done.output, done.errors) if part.strip())
    return HookOutcome(
        hook,
        command,
        None if done.timed_out else done.exit_code,
        done.timed_out,
        _cut(output),
        done.errors,
        _ms(started),
    )


def _cut(text: str) -> str:
    if len(text) <= OUTPUT_CHARS:
        return text
    half = OUTPUT_CHARS // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters cut ...]\n{text[-half:]}"


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


__all__ = ["OUTPUT_CHARS", "HookOutcome", "hook_environment", "run_hook"]
