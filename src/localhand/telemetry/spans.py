"""One run's events as OpenTelemetry spans, in the shape of the GenAI semantic conventions
(``SEMCONV_VERSION``):

- ``invoke_agent localhand`` (INTERNAL): the run, from the door to its Result; it joins the
  trace of whatever span is current where the run starts (the host program's).
- ``chat {model}`` (CLIENT), its child: one model request and its reply, with the model, the
  provider, token usage and the finish reason.
- ``execute_tool {name}`` (INTERNAL), its child: one tool call, with the tool's name and call
  id, ``error.type`` when it failed.

The conversation (the task, the replies, the tools' arguments and results, the answer) is
put on the spans only with ``content``, scrubbed of secrets as the store's copy is; tools'
arguments and results are then the timeline's summaries (``events.ToolCallEvent``), the
model's own calls whole.

Imports ``opentelemetry`` (the API only): ``localhand.telemetry`` imports this module only
when tracing is on.
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from localhand._version import __version__
from localhand.events import (
    Event,
    ModelReply,
    ModelRequest,
    TaskFinished,
    TaskStarted,
    ToolCallEvent,
)
from localhand.safety.secrets.scrub import scrub_text

SEMCONV_VERSION = "1.38.0"
"""The OpenTelemetry semantic conventions the spans follow; their GenAI part is in development
(its attributes are still renamed between releases), so a newer release may name things
otherwise."""
AGENT_NAME = "localhand"
OTHER_ERROR = "_OTHER"
"""``error.type`` where nothing more exact is known (the conventions' fallback)."""
TOOL_ERROR = "tool_error"
"""``error.type`` of a tool call that failed (its result went back to the model)."""
NO_REPLY = "no_reply"
"""``error.type`` of a model request that never got its reply (the run ended first)."""

Attributes = dict[str, Any]


def tracer() -> trace.Tracer:
    """localhand's tracer, from the global provider the host set up (none: spans go nowhere)."""
    return trace.get_tracer(
        "localhand",
        __version__,
        schema_url=f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}",
    )


class RunSpans:
    """A subscriber to one run's bus that writes its spans (see the module docstring).

    The run's span starts when this is made and ends at ``close``; a chat span starts at its
    ``model_request`` and ends at its ``model_reply``; a tool's span is written when its
    ``tool_call`` event arrives, timed back from its duration.
    """

    def __init__(
        self,
        *,
        task_id: str,
        model: str,
        provider: str,
        content: bool,
        description: str = "",
    ) -> None:
        self.model = model
        self.provider = provider
        self.content = content
        self._tracer = tracer()
        self.run = self._tracer.start_span(
            f"invoke_agent {AGENT_NAME}",
            kind=SpanKind.INTERNAL,
            attributes={
                **self._common("invoke_agent"),
                "gen_ai.agent.name": AGENT_NAME,
                "gen_ai.conversation.id": task_id,
            },
        )
        self._inside = trace.set_span_in_context(self.run)
        self._chats: dict[tuple[str, int], Span] = {}
        if content and description:
            self.run.set_attribute("gen_ai.input.messages", _messages("user", text=description))

    def name_provider(self, provider: str) -> None:
        """The backend the run settled on: the run's span and the spans still to come."""
        self.provider = provider
        self.run.set_attribute("gen_ai.provider.name", provider)

    def _common(self, operation: str) -> Attributes:
        return {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model,
        }

    # -- the events ---------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        if isinstance(event, ModelRequest):
            self._request(event)
        elif isinstance(event, ModelReply):
            self._reply(event)
        elif isinstance(event, ToolCallEvent):
            self._tool(event)
        elif isinstance(event, TaskStarted):
            self._started(event)
        elif isinstance(event, TaskFinished):
            self._finished(event)

    def _started(self, event: TaskStarted) -> None:
        if event.model:  # the model the run settled on
            self.model = event.model
            self.run.set_attribute("gen_ai.request.model", event.model)

    def _request(self, event: ModelRequest) -> None:
        key = (event.task_id, event.iteration)
        earlier = self._chats.pop(key, None)
        if earlier is not None:  # asked again before a reply: that request failed
            _failed(earlier, NO_REPLY, end=_ns(event.ts))
        self._chats[key] = self._chat_span(start=_ns(event.ts))

    def _chat_span(self, *, start: int) -> Span:
        return self._tracer.start_span(
            f"chat {self.model}",
            context=self._inside,
            kind=SpanKind.CLIENT,
            attributes=self._common("chat"),
            start_time=start,
        )

    def _reply(self, event: ModelReply) -> None:
        span = self._chats.pop((event.task_id, event.iteration), None)
        if span is None:  # a reply whose request was not announced: timed back
            span = self._chat_span(start=_ns(event.ts - event.duration_ms / 1000))
        span.set_attributes(
            {
                "gen_ai.usage.input_tokens": event.tokens_in,
                "gen_ai.usage.output_tokens": event.tokens_out,
                "gen_ai.response.finish_reasons": [_finish_reason(event)],
            }
        )
        if self.content:
            span.set_attribute("gen_ai.output.messages", _reply_messages(event))
        span.end(end_time=_ns(event.ts))

    def _tool(self, event: ToolCallEvent) -> None:
        attributes: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.tool_name,
            "gen_ai.tool.type": "extension" if event.server else "function",
        }
        if event.call_id:
            attributes["gen_ai.tool.call.id"] = event.call_id
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = scrub_text(event.args_summary)
            attributes["gen_ai.tool.call.result"] = scrub_text(event.result_summary)
        span = self._tracer.start_span(
            f"execute_tool {event.tool_name}",
            context=self._inside,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_ns(event.ts - event.duration_ms / 1000),
        )
        if event.ok:
            span.end(end_time=_ns(event.ts))
        else:
            _failed(span, TOOL_ERROR, end=_ns(event.ts))

    def _finished(self, event: TaskFinished) -> None:
        result = event.result
        self.run.set_attributes(
            {
                "gen_ai.usage.input_tokens": int(result.get("tokens_in") or 0),
                "gen_ai.usage.output_tokens": int(result.get("tokens_out") or 0),
                "localhand.result.status": str(result.get("status", "")),
                "localhand.termination_reason": str(result.get("termination_reason", "")),
            }
        )
        if result.get("status") == "error":
            self.run.set_attribute("error.type", str(result.get("termination_reason") or "error"))
            self.run.set_status(Status(StatusCode.ERROR))
        if self.content and result.get("output"):
            answer = _messages("assistant", text=str(result["output"]))
            self.run.set_attribute("gen_ai.output.messages", answer)

    # -- the end ------------------------------------------------------------------------------

    def close(self, *, error: str | None = None) -> None:
        """End the run's span (and any request still waiting for its reply); ``error``: the
        exception that ended the run."""
        for span in self._chats.values():
            _failed(span, NO_REPLY)
        self._chats.clear()
        if error is not None:
            _failed(self.run, error)
        else:
            self.run.end()


def _failed(span: Span, error_type: str, *, end: int | None = None) -> None:
    span.set_attribute("error.type", error_type or OTHER_ERROR)
    span.set_status(Status(StatusCode.ERROR))
    span.end(end_time=end)


def _ns(seconds: float) -> int:
    """An event's time (seconds since the epoch) as OpenTelemetry's nanoseconds."""
    return int(seconds * 1_000_000_000)


def _finish_reason(event: ModelReply) -> str:
    """The conventions' words: ``tool_call`` for a reply that calls tools, else the server's
    (``stop``, ``length``), ``stop`` when it gave none."""
    if event.tool_calls:
        return "tool_call"
    return event.done_reason or "stop"


def _messages(role: str, *, text: str) -> str:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages`` of one text message (JSON)."""
    message = {"role": role, "parts": [{"type": "text", "content": text}]}
    return scrub_text(json.dumps([message], ensure_ascii=False))


def _reply_messages(event: ModelReply) -> str:
    """A reply as ``gen_ai.output.messages``: its thinking, its text and its tool calls."""
    parts: list[dict[str, Any]] = []
    if event.thinking:
        parts.append({"type": "reasoning", "content": event.thinking})
    if event.content:
        parts.append({"type": "text", "content": event.content})
    for call in event.tool_calls:
        function = call.get("function", {})
        part = {"type": "tool_call", "name": function.get("name")}
        if call.get("id"):
            part["id"] = call["id"]
        parts.append({**part, "arguments": function.get("arguments")})
    message = {"role": "assistant", "parts": parts, "finish_reason": _finish_reason(event)}
    return scrub_text(json.dumps([message], ensure_ascii=False, default=str))


__all__ = ["SEMCONV_VERSION", "RunSpans", "tracer"]
