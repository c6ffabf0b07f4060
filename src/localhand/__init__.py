"""localhand: make local LLMs actually do things."""

from localhand._lazy import lazy_exports as _lazy_exports
from localhand._version import __version__

TYPE_CHECKING = False  # what typing.TYPE_CHECKING is; importing typing would cost ~10 ms
if TYPE_CHECKING:
    from localhand.errors import ConfigError, LocalhandError, ModelError, StopRun, ToolError
    from localhand.events import Event, EventBus, EventLog
    from localhand.models import ChatModel, ChatOptions, ScriptedModel
    from localhand.parsing import ParsedReply, parse_tool_calls
    from localhand.run.guardrails import Limits
    from localhand.run.task import Task
    from localhand.session.agent import Agent
    from localhand.session.api import run_plan, run_task
    from localhand.tools import Tool, ToolRegistry, Workspace, default_tools
    from localhand.types import Reply, Result, ToolCall, ToolResult, Usage
del TYPE_CHECKING


_LAZY = {
    "Agent": "session.agent",
    "ConfigError": "errors",
    "LocalhandError": "errors",
    "ModelError": "errors",
    "StopRun": "errors",
    "ToolError": "errors",
    "Event": "events",
    "EventBus": "events",
    "EventLog": "events",
    "Limits": "run.guardrails",
    "ChatModel": "models",
    "ChatOptions": "models",
    "ScriptedModel": "models",
    "ParsedReply": "parsing",
    "parse_tool_calls": "parsing",
    "Task": "run.task",
    "run_plan": "session.api",
    "run_task": "session.api",
    "Tool": "tools",
    "ToolRegistry": "tools",
    "Workspace": "tools",
    "default_tools": "tools",
    "Reply": "types",
    "Result": "types",
    "ToolCall": "types",
    "ToolResult": "types",
    "Usage": "types",
}
"""Where each public name lives. They load on first use, so that ``import localhand`` (and
the command line, which imports only what the command it runs needs) starts fast."""

__all__ = [
    "Agent",
    "ChatModel",
    "ChatOptions",
    "ConfigError",
    "Event",
    "EventBus",
    "EventLog",
    "Limits",
    "LocalhandError",
    "ModelError",
    "ParsedReply",
    "Reply",
    "Result",
    "ScriptedModel",
    "StopRun",
    "Task",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "Usage",
    "Workspace",
    "__version__",
    "default_tools",
    "parse_tool_calls",
    "run_plan",
    "run_task",
]


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY)
