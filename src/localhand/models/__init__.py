"""Model backends behind one protocol: ``chat(messages, tools, options) -> Reply``; those
that can also ``stream(messages, options)`` one answer as ``StreamChunk``s."""

from localhand._lazy import lazy_exports
from localhand.models.base import ChatModel, ChatOptions, StreamChunk, StreamingChatModel

TYPE_CHECKING = False  # not `from typing import ...`, as in localhand._lazy
if TYPE_CHECKING:
    from localhand.models.scripted import ScriptedModel, Streamed

# the scripted model is for tests and replays: a run to a server loads it only if asked for
__getattr__, __dir__, _ = lazy_exports(__name__, {"scripted": "ScriptedModel Streamed"})

__all__ = [
    "ChatModel",
    "ChatOptions",
    "ScriptedModel",
    "StreamChunk",
    "Streamed",
    "StreamingChatModel",
]
