"""The seam between the loop and a model server.

``ChatModel`` declares everything the loop uses of a model: its name and ``chat``, and what the
loop adapts to (the family profile, the context window, the reply ceiling, whether replies
stream, thinking's budget, watching replies, planning the window). ``BaseChatModel`` gives each a
default, as pydantic-ai's ``Model`` does, so a backend writes ``chat``, names itself (``_name``)
and overrides only what it has; ``declared`` gives a plain object with only ``name`` and ``chat``
(a test double, a third-party wrapper) those defaults. ``tiny`` says the model is too small
for the general prompt (the tiny policy, ``localhand.run.tiny``). The loop asks; it never probes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from localhand.types import Message, Reply, Usage

if TYPE_CHECKING:
    from localhand.models._slots import SlotFile
    from localhand.profiles import Profile

Tools: TypeAlias = Sequence[dict[str, Any]] | None
"""The tools a request offers (OpenAI/Ollama function schemas), or None: no tools."""

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
    reply_schema: dict[str, Any] | None = None
    """A JSON schema this turn's reply must follow, with the tools still offered (a policy's
    narrowing of the calls, ``localhand.run.tiny``). A backend that decodes under a schema
    (the embedded one) uses it in place of its schema of every call; others ignore it."""


@runtime_checkable
class PlainChatModel(Protocol):
    """The least a model is: a name and ``chat``. ``declared`` makes it a ``ChatModel``."""

    @property
    def name(self) -> str:
        """The model's name as the user knows it (``qwen3:8b``)."""
        ...

    def chat(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
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
class StreamingChatModel(PlainChatModel, Protocol):
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
class ReplyStreamingModel(PlainChatModel, Protocol):
    """A :class:`ChatModel` that can also stream the reply ``chat`` would return, tools and all,
    so that the tool loop can watch it as it comes (``--watch-replies``) and stop one that
    loops by closing the stream.

    The contract of ``StreamingChatModel.stream`` holds, and the last chunk carries ``reply``:
    the same ``Reply`` that ``chat`` returns for the same request. Closing the iterator early
    closes the connection, which stops Ollama and llama-server generating.
    """

    def stream_reply(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """Stream the reply to the conversation, then a last chunk with the whole ``reply``."""
        ...


@runtime_checkable
class ChatModel(StreamingChatModel, ReplyStreamingModel, Protocol):
    """Anything that turns a conversation into one assistant reply, with what the loop uses
    of it declared (defaults: ``BaseChatModel``): ``stream`` and ``stream_reply`` too, under
    the contracts of ``StreamingChatModel`` and ``ReplyStreamingModel``."""

    @property
    def profile(self) -> Profile | None:
        """The family profile the backend renders requests for; ``None``: the loop takes the
        profile of ``name``."""
        ...

    @property
    def context_limit(self) -> int | None:
        """The context window in tokens, once known (some backends learn it at the first
        request)."""
        ...

    @property
    def reply_ceiling(self) -> int | None:
        """The most tokens one reply may have, when the backend sets one."""
        ...

    @property
    def streams_replies(self) -> bool:
        """Whether ``stream_reply`` streams (else it hands out ``chat``'s reply whole)."""
        ...

    @property
    def watch_replies(self) -> bool:
        """Read each tool-loop reply as a stream and stop one that loops (``--watch-replies``)."""
        ...

    @property
    def think_budget(self) -> int | None:
        """Thinking tokens a reply may spend before it is stopped; ``None``: the profile's."""
        ...

    @property
    def tiny(self) -> bool:
        """Whether the model is too small for the general prompt and tools (under a billion
        parameters): the loop then runs the tiny policy (``localhand.run.tiny``)."""
        ...

    @property
    def call_transport(self) -> str:
        """How tool calls travel: ``native`` (the server's tools field) or ``schema`` (a JSON
        object the reply is held to: the embedded backend, ``tool_mode = "schema"``)."""
        ...

    @property
    def server_kind(self) -> str:
        """The server the backend speaks to: ``ollama``, ``openai`` (llama-server, vLLM, LM
        Studio), ``embedded`` or ``other``; a family's profile says which of them carries its
        tools natively (``native_tools_ollama``, ``native_tools_llama_server``)."""
        ...

    @property
    def template_renders_tools(self) -> bool | None:
        """Whether the server's chat template shows the model the tools sent natively, as the
        server says (llama-server's ``/apply-template``); ``None``: unknown, and the family's
        profile decides (``native_tools_llama_server``)."""
        ...

    @property
    def plans_context(self) -> bool:
        """Whether ``plan_context`` sizes the window (then the loop estimates the run for it)."""
        ...

    def plan_context(self, tokens: int) -> object:
        """Size the context window for a run expected to need ``tokens`` (Ollama's
        ``num_ctx``), before its first request."""
        ...

    def slot_file(self, action: Literal["save", "restore"], filename: str) -> SlotFile | None:
        """The server slot it holds saved to, or restored from, a file there; None: no slot."""
        ...


class BaseChatModel:
    """The defaults of every member of ``ChatModel`` but ``chat``: a backend subclasses it,
    writes ``chat``, sets ``_name`` (or overrides ``name``) and overrides what else it has."""

    profile: Profile | None = None
    watch_replies: bool = False
    think_budget: int | None = None
    streams_replies: bool = False
    plans_context: bool = False
    tiny: bool = False
    call_transport: str = "native"
    server_kind: str = "other"
    template_renders_tools: bool | None = None

    _name: str
    """The model's name as the user knows it, which ``name`` gives."""

    @property
    def name(self) -> str:
        return self._name

    @property
    def context_limit(self) -> int | None:
        return None

    @property
    def reply_ceiling(self) -> int | None:
        return None

    def chat(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Reply:
        raise NotImplementedError

    def stream(
        self, messages: Sequence[Message], options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """One answer without tools (see ``StreamingChatModel`` for the contract):
        ``stream_reply``'s chunks, the last without its reply."""
        for chunk in self.stream_reply(messages, None, options):
            yield replace(chunk, reply=None) if chunk.done else chunk

    def stream_reply(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """``chat``'s reply as one delta, and the last chunk with the reply whole (a backend
        that streams overrides it)."""
        reply = self.chat(messages, tools, options)
        if reply.thinking:
            yield StreamChunk(thinking=reply.thinking)
        if reply.content:
            yield StreamChunk(content=reply.content)
        model = reply.model or self.name
        yield StreamChunk(
            done=True, usage=reply.usage, done_reason=reply.done_reason, model=model, reply=reply
        )

    def plan_context(self, tokens: int) -> object:
        return None

    def slot_file(self, action: Literal["save", "restore"], filename: str) -> SlotFile | None:
        return None


class Declared(BaseChatModel):
    """A plain model (``name`` and ``chat``; perhaps ``stream``) with the defaults declared."""

    def __init__(self, plain: PlainChatModel) -> None:
        self.plain = plain
        self.streams_replies = isinstance(plain, ReplyStreamingModel)

    @property
    def name(self) -> str:
        return self.plain.name

    def chat(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Reply:
        return self.plain.chat(messages, tools, options)

    def stream(
        self, messages: Sequence[Message], options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        if isinstance(self.plain, StreamingChatModel):
            return self.plain.stream(messages, options)
        return super().stream(messages, options)

    def stream_reply(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        if isinstance(self.plain, ReplyStreamingModel):
            return self.plain.stream_reply(messages, tools, options)
        return super().stream_reply(messages, tools, options)


def declared(model: ChatModel | PlainChatModel) -> ChatModel:
    """``model`` with every member the loop uses: itself when it declares them (a
    ``BaseChatModel``), else wrapped with the defaults around its ``name`` and ``chat``."""
    if isinstance(model, BaseChatModel):
        return model
    return Declared(model)
