"""The seam between the loop and a model server."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from localhand.types import Message, Reply, Usage

DEFAULT_MAX_REPLY_TOKENS = 4096
"""The ceiling on one reply, thinking included, unless ``max_reply_tokens`` says otherwise.

Why 4096: a turn of the tool loop is one tool call, or a short answer. The longest call that
is still reasonable, ``write_file`` with a whole file, fits in about 16 KB (300-400 lines of
code); a larger file should be written in parts or patched with ``edit_file``, which is what
the nudge for a reply cut at the ceiling says. A thinking model's deliberation counts toward
the same ceiling on every backend (Ollama's ``num_predict``, ``max_tokens`` on llama-server,
vLLM and LM Studio), and a few hundred to two thousand tokens of it are usual. Without a
ceiling the servers' default is unlimited: a model caught in a loop writes until the context
window is full, 8K to 32K tokens, which at a local model's 20-50 tokens a second is 3 to 25
minutes for one turn; the ceiling bounds it at about two minutes (4096 tokens at 30 a second).
It equals the Ollama backend's default ``reply_reserve``, so the context window it asks for has
room for a whole reply.
"""


@dataclass(frozen=True, slots=True)
class ChatOptions:
    """Per-request settings. Backend-wide ones (num_ctx, keep_alive, think) live on the backend."""

    format: dict[str, Any] | None = None
    """A JSON schema the reply must follow (constrained decoding). Tools are not sent with it."""
    timeout: float | None = None
    """Seconds this request may take at most, e.g. what is left of the task's wall clock."""
    think: bool | str | None = None
    """Thinking for this request only (the think-budget retry asks with it off); ``None``: the
    backend's setting, else the model's profile (``localhand.profiles``)."""


@runtime_checkable
class ChatModel(Protocol):
    """Anything that turns a conversation into one assistant reply."""

    @property
    def name(self) -> str:
        """The model's name as the user knows it (``qwen3:8b``)."""
        ...

    def chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        options: ChatOptions | None = None,
    ) -> Reply:
        """Send the conversation; raise ``ModelError`` subclasses on failure."""
        ...


@dataclass(frozen=True, slots=True)
class StreamChunk:
    """One piece of a streamed reply: a text delta, or (``done``) the end with its accounting.

    Thinking is kept apart from the answer: a delta carries ``content`` or ``thinking``.
    """

    content: str = ""
    thinking: str = ""
    done: bool = False
    """True on the last chunk only; it carries ``usage``, ``done_reason`` and ``model``."""
    usage: Usage | None = None
    """The server's token counts, when it sent them (on the last chunk)."""
    done_reason: str | None = None
    """``stop``, or ``length`` when the reply was cut off at the token limit."""
    model: str = ""
    arguments: str = ""
    """A piece of a tool call's arguments, as a server that streams calls sends them
    (``stream_reply`` only); the whole calls are in ``reply``."""
    reply: Reply | None = None
    """On the last chunk of ``stream_reply``: the whole reply, as ``chat`` returns it."""


@runtime_checkable
class StreamingChatModel(ChatModel, Protocol):
    """A :class:`ChatModel` that can also stream one answer, without tools.

    The contract every backend keeps:

    - deltas first, then exactly one chunk with ``done`` set; a stream that ends without it
      raises ``BadResponse``;
    - failures raise ``ModelError`` subclasses, from the first ``next()`` or mid-stream;
    - only a failure before the first delta may be retried: text already handed out is never
      sent again, so the caller never shows it twice;
    - ``options.timeout`` bounds the whole reply (``ModelTimeout`` when it runs out), and a
      server that goes quiet mid-reply is cut off after the backend's idle timeout;
    - closing the iterator early (``break``, Ctrl-C) releases the connection.
    """

    def stream(
        self, messages: Sequence[Message], options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """Stream the reply to the conversation, as text deltas and a final chunk."""
        ...


@runtime_checkable
class ReplyStreamingModel(ChatModel, Protocol):
    """A :class:`ChatModel` that can also stream the reply ``chat`` would return, tools and all,
    so that the tool loop can watch it as it comes (``--watch-replies``) and stop one that
    loops by closing the stream.

    The contract of ``StreamingChatModel.stream`` holds, and the last chunk carries ``reply``:
    the same ``Reply`` that ``chat`` returns for the same request. Closing the iterator early
    closes the connection, which stops Ollama and llama-server generating.
    """

    def stream_reply(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        options: ChatOptions | None = None,
    ) -> Iterator[StreamChunk]:
        """Stream the reply to the conversation, then a last chunk with the whole ``reply``."""
        ...
