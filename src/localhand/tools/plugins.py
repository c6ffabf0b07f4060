"""Tools from installed packages: the ``localhand.tools`` entry points (``localhand.plugins``).

Each names a typed function (as ``default_tools(workspace, my_function)`` takes one) or a
``Tool``. It is offered after the built-in tools and the caller's own; a plugin whose name is
taken already is left out with a warning, so a package cannot replace ``run_command`` or
``write_file`` with a tool of its own. A plugin's function runs in localhand's process, not
in the sandbox: installing the package is trusting it, as with any Python package.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from localhand.plugins.entry_points import TOOLS, loaded
from localhand.tools.registry import Tool


def plugin_tools(taken: Collection[str] = ()) -> list[Tool]:
    """The installed packages' tools whose names are not in ``taken`` (nor each other's)."""
    tools: list[Tool] = []
    names = set(taken)
    for plugin, value in loaded(TOOLS, _kind):
        try:
            tool = value if isinstance(value, Tool) else Tool.from_function(value)
        except Exception as error:  # no type hints, an odd signature: the package's fault
            plugin.warn(f"not a tool localhand can offer ({type(error).__name__}: {error})")
            continue
        if tool.name in names:
            plugin.warn(f"a tool named {tool.name!r} is offered already")
            continue
        names.add(tool.name)
        tools.append(tool)
    return tools


def _kind(value: Any) -> str | None:
    if isinstance(value, Tool) or callable(value):
        return None
    return f"a {type(value).__name__}, not a function or a localhand Tool"
