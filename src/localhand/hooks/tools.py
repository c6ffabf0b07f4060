"""The run's tools with the user's hooks around each call."""

from __future__ import annotations

from localhand.hooks.hookset import Hooks
from localhand.tools.registry import ToolRegistry, WrappedRegistry
from localhand.types import ToolCall, ToolResult


class HookedTools(WrappedRegistry):
    """``inner`` (the run's registry, MCP tools included), each call passing ``hooks``: the
    ``pre_tool`` hooks may block it, the post hooks' output is added to its result."""

    def __init__(self, inner: ToolRegistry, hooks: Hooks) -> None:
        super().__init__(inner)
        self.hooks = hooks

    def execute(self, call: ToolCall) -> ToolResult:
        blocked = self.hooks.before(call)
        if blocked is not None:
            return blocked
        return self.hooks.after(call, self.inner.execute(call))


__all__ = ["HookedTools"]
