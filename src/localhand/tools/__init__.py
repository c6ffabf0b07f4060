"""Tools: typed functions offered to the model, and the workspace they are jailed in.

registry = default_tools("/path/to/repo")          # read, write, edit, list, search, run
registry = default_tools(workspace, my_function)   # plus your own typed functions
registry = default_tools(workspace, policy="dangerous", approver=TerminalApprover())
result = registry.execute(ToolCall("read_file", {"path": "README.md"}))
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from localhand.paths import IGNORED_DIRS
from localhand.safety.approval.approver import ApprovalPolicy, Approver, DenyAll
from localhand.tools.files import FileTools
from localhand.tools.limits import ToolLimits
from localhand.tools.plugins import plugin_tools
from localhand.tools.registry import Tool, ToolRegistry
from localhand.tools.shell import CommandOutput, ShellTool, run_shell
from localhand.tools.workspace import Workspace


def default_tools(
    workspace: Workspace | str | os.PathLike[str],
    *extra: Tool | Callable[..., Any],
    limits: ToolLimits | None = None,
    policy: ApprovalPolicy = "dangerous",
    approver: Approver | None = None,
    isolate_network: bool = False,
    checkpoint: Callable[[str], str | None] | None = None,
    plugins: bool = True,
    max_jobs: int = 4,
) -> ToolRegistry:
    """The default tool set for ``workspace``, followed by any ``extra`` tools or functions,
    then (``plugins``) the tools installed packages add (``localhand.tools.plugins``).

    ``policy`` says which commands (and writes into ``.git``) need approval and ``approver``
    gives it; None refuses all of them (``DenyAll``), right for runs without a person.
    ``isolate_network`` runs commands without network access where the system allows it;
    ``checkpoint`` copies the workspace before a dangerous command runs (see ``ShellTool``);
    ``max_jobs`` background commands may run at once (``localhand.tools.jobs``).
    """
    space = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    approver = approver if approver is not None else DenyAll()
    files = FileTools(space, limits, policy=policy, approver=approver)
    shell = ShellTool(
        space,
        limits,
        policy=policy,
        approver=approver,
        isolate_network=isolate_network,
        checkpoint=checkpoint,
        max_jobs=max_jobs,
    )
    registry = ToolRegistry([*files.functions(), *shell.functions(), *extra])
    if not plugins:
        return registry

    return ToolRegistry([*registry, *plugin_tools(registry.names)])


__all__ = [
    "IGNORED_DIRS",
    "CommandOutput",
    "FileTools",
    "ShellTool",
    "Tool",
    "ToolLimits",
    "ToolRegistry",
    "Workspace",
    "default_tools",
    "run_shell",
]
