"""localhand: make local LLMs actually do things."""

from localhand._lazy import lazy_exports as _lazy_exports
from localhand._version import __version__ as __version__

TYPE_CHECKING = False  # what typing.TYPE_CHECKING is; importing typing would cost ~10 ms
if TYPE_CHECKING:
    from localhand.errors import ConfigError as ConfigError
    from localhand.errors import LocalhandError as LocalhandError
    from localhand.errors import ModelError as ModelError
    from localhand.errors import StopRun as StopRun
    from localhand.errors import ToolError as ToolError
    from localhand.events import Event as Event
    from localhand.events import EventBus as EventBus
    from localhand.events import EventLog as EventLog
    from localhand.models import ChatModel as ChatModel
    from localhand.models import ChatOptions as ChatOptions
    from localhand.models import ScriptedModel as ScriptedModel
    from localhand.parsing import ParsedReply as ParsedReply
    from localhand.parsing import parse_tool_calls as parse_tool_calls
    from localhand.run.guardrails import Limits as Limits
    from localhand.run.task import Task as Task
    from localhand.session.agent import Agent as Agent
    from localhand.session.api import run_plan as run_plan
    from localhand.session.api import run_task as run_task
    from localhand.tools import Tool as Tool
    from localhand.tools import ToolRegistry as ToolRegistry
    from localhand.tools import Workspace as Workspace
    from localhand.tools import default_tools as default_tools
    from localhand.types import Reply as Reply
    from localhand.types import Result as Result
    from localhand.types import ToolCall as ToolCall
    from localhand.types import ToolResult as ToolResult
    from localhand.types import Usage as Usage
del TYPE_CHECKING


_LAZY = {
    "errors": "ConfigError LocalhandError ModelError StopRun ToolError",
    "events": "Event EventBus EventLog",
    "run.guardrails": "Limits",
    "models": "ChatModel ChatOptions ScriptedModel",
    "parsing": "ParsedReply parse_tool_calls",
    "run.task": "Task",
    "session.agent": "Agent",
    "session.api": "run_plan run_task",
    "tools": "Tool ToolRegistry Workspace default_tools",
    "types": "Reply Result ToolCall ToolResult Usage",
}
"""Where each public name lives. They load on first use, so that ``import localhand`` (and
the command line, which imports only what the command it runs needs) starts fast."""

__getattr__, __dir__, _names = _lazy_exports(__name__, _LAZY)
__all__ = sorted([*_names, "__version__"])
