"""Embedded backend: a GGUF model run in this process by llama-cpp-python, no server at all.

What it takes care of, and why:

- **Valid calls by construction.** Each reply with tools is decoded under a grammar made from
  a JSON schema of either a valid call (the tool's name as an enum, with that tool's
  arguments) or a final answer (``_json_calls``). Even a 270M model then emits only calls
  that name a real tool with well-typed arguments. The history is rewritten in that same JSON
  form, with tool results as user turns, so that the model sees one format and any chat
  template can render it.
- **The chat template comes from the GGUF** (``tokenizer.chat_template``), rendered with
  llama-cpp-python's Jinja formatter; a GGUF without one falls back to ChatML, with a warning.
  We render and tokenize ourselves rather than call ``create_chat_completion`` so that we
  keep the token counts while streaming, and can time the first token.
- **The caller's schema, when it gives one.** ``ChatOptions.reply_schema`` narrows the calls
  of one turn (the tiny policy, ``localhand.run.tiny``, allows only calls that can work); the
  backend decodes under it and knows nothing of why. It declares ``tiny`` (under a billion
  parameters) so that the loop can choose that policy.
- **The mask runs on llguidance** (``_grammar_filter``), through llama-cpp-python's public
  logits-processor hook: a millisecond a token, where llama.cpp's grammar sampler checks all
  262,144 tokens of Gemma's vocabulary.
- **Load once per process.** Loading takes seconds, so models are cached by path and
  settings, shared by every ``EmbeddedModel`` on them, and used under one lock (a llama.cpp
  context is not thread-safe). Loading happens on the first request, or on ``load()``.
- **Timing shown to the user.** The load time and, for the first request, the time to the
  first token go to ``on_status``; every request's timing is kept in ``last_timing``.
- **Streaming** (``stream`` for the simple path, ``stream_reply`` for a watched tool loop):
  the same decoding, each piece handed out as it is sampled (``chat`` is ``stream_reply`` read
  to its end); the task's deadline is checked at every token. In-process there is no
  connection to drop and no server to go quiet, so there is no idle timeout.
- **Prompt cache.** llama-cpp-python keeps the KV cache of the longest common token prefix,
  so each turn only evaluates what the previous turn added.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from localhand.errors import BadResponse, ConfigError, ModelTimeout
from localhand.models._chat_template import chat_template
from localhand.models._common import deadline_of
from localhand.models._gguf_size import TINY_MAX_TOKENS, TINY_PARAMS, parameter_count
from localhand.models._json_calls import decode, plain_messages, reply_schema
from localhand.models.base import (
    DEFAULT_MAX_REPLY_TOKENS,
    BaseChatModel,
    ChatOptions,
    StreamChunk,
    Tools,
)
from localhand.profiles.table import JSON_CALLS
from localhand.types import Message, Reply, Usage

__all__ = ["EmbeddedModel", "Timing", "chat_template", "embedded_available"]

_log = logging.getLogger("localhand")
INSTALL_HINT = "pip install 'localhand[embedded]'"


def embedded_available() -> bool:
    """Whether llama-cpp-python is installed (the ``embedded`` extra)."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Timing:
    """How long one request took, in seconds."""

    first_token_s: float
    total_s: float
    prompt_tokens: int
    completion_tokens: int


@dataclass(slots=True)
class _Loaded:
    llm: Any
    lock: threading.Lock
    load_s: float
    formatter: Any
    n_params: int
    vocabulary: Any  # _grammar_filter.Vocabulary: numpy and llguidance load with the model


_CACHE: dict[tuple[str, int, int, int], _Loaded] = {}
_CACHE_LOCK = threading.Lock()


@atexit.register
def _free_models() -> None:
    """Free the cached models at exit, while llama_cpp is still whole: freed later, during the
    interpreter's teardown, its finalizers find their functions gone and print tracebacks.
    A model still in use (a run in a daemon thread) is left to the operating system."""
    with _CACHE_LOCK:
        loaded = list(_CACHE.values())
        _CACHE.clear()
    for item in loaded:
        if item.lock.acquire(blocking=False):
            try:
                with contextlib.suppress(Exception):  # exiting anyway: nobody to tell
                    item.llm.close()
            finally:
                item.lock.release()


class EmbeddedModel(BaseChatModel):
    """A :class:`~localhand.models.base.ChatModel` running a GGUF file in-process.

    Args:
        gguf: the model file.
        name: the name shown in results; defaults to the file's name without ``.gguf``.
        n_ctx: the context window, in tokens (the KV cache is allocated for all of it).
        n_threads: CPU threads; ``None`` is llama-cpp-python's default, half the cores. More
            is rarely faster: llama.cpp's threads wait for each other by spinning, so one
            busy core (a test runner, a compiler) slows every token down many times over.
        max_tokens: the reply ceiling, in tokens (4096 by default, and never more than the
            window has left); a reply stopped there has ``done_reason`` ``length``.
        temperature: sampling temperature (the grammar keeps any choice valid).
        repeat_penalty: discourages repeating recent tokens; small models otherwise fill
            a number with zeros or a string with one word. ``None``: 1.1, and 1.0 for a tiny
            model given a reply schema (its replies are then mostly copies: a path, a line).
        seed: the sampling seed, for repeatable runs.
        tiny: whether the loop should run the tiny policy (``localhand.run.tiny``) with it;
            ``None``: when it has under a billion parameters (read when first asked: loads it).
        on_warning: receives warnings (no chat template in the GGUF, a schema the grammar
            converter cannot take).
        on_status: receives progress a person wants to see: the load time and the time to
            the first token. Defaults to the ``localhand`` logger.
    """

    profile = JSON_CALLS  # it renders the history itself, as grammar-checked JSON calls
    streams_replies = True
    reply_ceiling = property(lambda self: self.max_tokens)  # the declared name of max_tokens

    server_kind = "embedded"
    call_transport = "schema"  # every reply held to a JSON object (a grammar)

    def __init__(
        self,
        gguf: str | os.PathLike[str],
        *,
        name: str | None = None,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_batch: int = 512,
        max_tokens: int = DEFAULT_MAX_REPLY_TOKENS,
        temperature: float = 0.2,
        repeat_penalty: float | None = None,
        seed: int = 0,
        tiny: bool | None = None,
        on_warning: Callable[[str], None] | None = None,
        on_status: Callable[[str], None] | None = None,
    ) -> None:
        path = Path(gguf).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"GGUF file {path} does not exist. Pass the path of a .gguf model file, or "
                f"{INSTALL_HINT} for a tiny default model."
            )
        self.path = path.resolve()
        self._name = name or self.path.name.removesuffix(".gguf")
        self.n_ctx, self.n_threads, self.n_batch = n_ctx, n_threads, n_batch
        self.max_tokens, self.temperature, self.seed = max_tokens, temperature, seed
        self.repeat_penalty, self._tiny_setting = repeat_penalty, tiny
        self._warn = on_warning or _log.warning
        self._status = on_status or _log.info
        self._grammars: dict[str, str] = {}  # llguidance's grammar by schema
        self._first_done = False
        self.last_timing: Timing | None = None

    @property
    def context_limit(self) -> int:
        """The window, in tokens: the loop compacts the history before reaching it."""
        return self.n_ctx

    @property
    def chat_template(self) -> str:
        """The Jinja template prompts are rendered with (loads the model)."""
        return str(self._loaded().formatter.template)

    @property
    def tiny(self) -> bool:  # type: ignore[override]  # a property: the GGUF tells
        """Whether it is a tiny model (see ``BaseChatModel``): as set, else by its parameter
        count, which loading tells."""
        if self._tiny_setting is not None:
            return self._tiny_setting
        return 0 < self._loaded().n_params < TINY_PARAMS

    def load(self) -> float:
        """Load the model now (a no-op when this process has it); returns the load time."""
        return self._loaded().load_s

    # -- the ChatModel protocol ----------------------------------------------------------------
    def chat(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Reply:
        *_, last = self.stream_reply(messages, tools, options)
        assert last.reply is not None  # stream_reply's last chunk carries it
        return last.reply

    def stream_reply(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """``chat``'s reply as it is sampled (see ``ReplyStreamingModel``): with tools, the
        JSON of the call or final answer the grammar allows. Closing the iterator stops the
        decoding."""
        loaded = self._loaded()
        fmt = options.format if options is not None else None
        given = options.reply_schema if options is not None else None
        schema = fmt if fmt is not None else (given or reply_schema(tools) if tools else None)
        ceiling, penalty = self.max_tokens, self.repeat_penalty
        if given is not None and fmt is None and self.tiny:
            # A caller's narrow schema: a tiny model's choices are then mostly copies (a path,
            # a line just read), which the repeat penalty steers away from; and a free string
            # it cannot end (it happens) costs seconds, not minutes.
            ceiling, penalty = min(ceiling, TINY_MAX_TOKENS), 1.0 if penalty is None else penalty
        shown = tools if fmt is None else None  # a format of the caller's: no tools described
        # A caller's reply schema comes with a system turn that says how to reply (the policy
        # wrote it): the tools are not described again.
        doc = "" if given is not None and fmt is None else None
        prompt = self._render(loaded, plain_messages(messages, shown, doc))
        deadline = deadline_of(options)
        with loaded.lock:  # held while the caller reads: the context serves one stream
            tokens = self._tokens(loaded, prompt)
            started, first, reason = time.perf_counter(), 0.0, "stop"
            pieces: list[str] = []
            max_tokens = min(ceiling, self.n_ctx - len(tokens))
            penalty = 1.1 if penalty is None else penalty
            decoding = self._pieces(loaded, tokens, max_tokens, penalty, schema, deadline)
            for text, finish in decoding:
                first, reason = first or time.perf_counter() - started, finish
                pieces.append(text)
                if text:
                    yield StreamChunk(content=text)
            text = "".join(pieces)
            used = len(loaded.llm.tokenize(text.encode(), add_bos=False, special=True))
        self._timed(first, time.perf_counter() - started, len(tokens), used)
        usage = Usage(len(tokens), used)
        reply = Reply(text, usage=usage, done_reason=reason, model=self._name)
        if tools and fmt is None:
            content, calls = decode(text)
            reply = replace(reply, content=content, tool_calls=calls)
        yield StreamChunk(done=True, usage=usage, done_reason=reason, model=self._name, reply=reply)

    # -- internals -------------------------------------------------------------------------------
    def _tokens(self, loaded: _Loaded, prompt: str) -> list[int]:
        tokens: list[int] = loaded.llm.tokenize(prompt.encode(), add_bos=False, special=True)
        if self.n_ctx - len(tokens) < 32:
            raise BadResponse(
                f"The conversation ({len(tokens)} tokens) no longer fits the context window "
                f"of {self._name} (n_ctx={self.n_ctx}). Raise n_ctx, or keep the task smaller."
            )
        return tokens

    def _timed(self, first: float, total: float, prompt: int, used: int) -> None:
        self.last_timing = Timing(first, total, prompt, used)
        if not self._first_done:
            self._first_done = True
            self._status(
                f"{self._name}: first token after {first:.2f} s ({prompt} prompt tokens); "
                f"{used} tokens in {total:.2f} s."
            )

    def _pieces(
        self,
        loaded: _Loaded,
        tokens: list[int],
        max_tokens: int,
        repeat_penalty: float,
        schema: dict[str, Any] | None,
        deadline: float | None,
    ) -> Iterator[tuple[str, str]]:
        """Each sampled piece of text with the finish reason so far; the caller holds the lock."""
        from llama_cpp import LogitsProcessorList  # the embedded extra

        from localhand.models._grammar_filter import grammar_for  # loads numpy: only when needed

        grammar = (
            None
            if schema is None
            else grammar_for(loaded.vocabulary, schema, self._grammars, self._warn)
        )
        reason, count = "stop", 0
        stream = loaded.llm.create_completion(
            tokens,
            max_tokens=max_tokens,
            temperature=self.temperature,
            repeat_penalty=repeat_penalty,
            seed=self.seed,
            logits_processor=LogitsProcessorList([grammar]) if grammar else None,
            stream=True,
        )
        try:
            for chunk in stream:
                choice = chunk["choices"][0]
                reason = choice.get("finish_reason") or reason
                count += 1
                if deadline is not None and time.monotonic() > deadline:
                    raise ModelTimeout(
                        f"{self._name} did not finish its reply in the time left of the task "
                        f"({count} tokens so far); give the task a longer --timeout."
                    )
                yield choice.get("text") or "", reason
        finally:
            stream.close()  # stops decoding (also when the caller stops reading): context usable

    def _render(self, loaded: _Loaded, messages: list[dict[str, str]]) -> str:
        try:
            return loaded.formatter(messages=messages).prompt
        except Exception as first:
            # Some templates refuse a system turn: fold it into the first user turn.
            if len(messages) > 1 and messages[0]["role"] == "system":
                head, rest = messages[0], [dict(m) for m in messages[1:]]
                rest[0]["content"] = f"{head['content']}\n\n{rest[0]['content']}"
                try:
                    return loaded.formatter(messages=rest).prompt
                except Exception:
                    pass
            raise BadResponse(
                f"The chat template of {self.path.name} cannot render the conversation: {first}"
            ) from None

    def _loaded(self) -> _Loaded:
        key = (str(self.path), self.n_ctx, self.n_threads or 0, self.n_batch)
        with _CACHE_LOCK:  # one load at a time: two concurrent loads would double the memory
            if key not in _CACHE:
                _CACHE[key] = self._load()
            return _CACHE[key]

    def _load(self) -> _Loaded:
        try:
            from llama_cpp import Llama  # the embedded extra
            from llama_cpp._utils import suppress_stdout_stderr  # the embedded extra
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # the embedded extra
        except ImportError:
            raise ConfigError(
                f"The embedded backend needs llama-cpp-python: {INSTALL_HINT} (it compiles "
                "llama.cpp, a few minutes)."
            ) from None
        size = self.path.stat().st_size / 1e6
        self._status(f"Loading {self.path.name} ({size:.0f} MB) in this process...")
        started = time.perf_counter()
        try:
            # llama.cpp prints some notes even when told not to; they would break the live view
            with suppress_stdout_stderr(disable=False):
                llm = Llama(
                    model_path=str(self.path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    n_batch=self.n_batch,
                    seed=self.seed,
                    verbose=False,
                )
        except (ValueError, RuntimeError) as exc:
            raise ConfigError(f"Could not load {self.path} as a GGUF model: {exc}") from None
        load_s = time.perf_counter() - started
        template, fallback = chat_template(llm.metadata)
        if fallback:
            self._warn(f"{self.path.name} has no chat template in its metadata; {fallback}.")
        eos, bos = llm.token_eos(), llm.token_bos()
        formatter = Jinja2ChatFormatter(
            template,
            eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
            bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
            stop_token_ids=[eos] if eos != -1 else None,
        )
        self._status(f"Loaded {self._name} in {load_s:.1f} s (n_ctx {self.n_ctx}).")
        from localhand.models._grammar_filter import Vocabulary  # loads numpy: only when needed

        n_params = parameter_count(llm.metadata)
        return _Loaded(llm, threading.Lock(), load_s, formatter, n_params, Vocabulary(llm))
