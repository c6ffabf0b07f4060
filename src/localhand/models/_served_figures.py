"""The server's own figures for one request: what it prefilled, what it reused from its prompt
cache, and how long each part took.

On a local machine prefill (prompt processing) is the cost that matters, and only the server
knows whether its cache held; localhand's own estimate from prompt lengths cannot say. Each
server words it differently:

- **llama-server** adds ``timings`` to every completion (and to the last chunk of a stream):
  ``prompt_n`` tokens prefilled, ``cache_n`` reused, ``prompt_ms`` / ``predicted_ms`` and the
  rates ``prompt_per_second`` / ``predicted_per_second``; with speculative decoding
  (``--spec-type``) also ``draft_n`` tokens drafted and ``draft_n_accepted`` accepted.
- **vLLM, LM Studio, Ollama's /v1 and hosted APIs** say ``usage.prompt_tokens_details.
  cached_tokens``, part of ``usage.prompt_tokens``; no timings.
- **Ollama's /api/chat** says ``prompt_eval_count`` (the whole prompt),
  ``prompt_eval_cached_count`` (the part read from the cache; newer builds, left out when
  zero), ``prompt_eval_duration`` (nanoseconds, the uncached part) and ``eval_count`` /
  ``eval_duration`` (docs.ollama.com/api/usage).

Whatever a server leaves out stays ``None`` (shown as "unknown"): an absent
``prompt_eval_cached_count`` may mean no hit or an older Ollama, so it is not read as zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from localhand.types import Usage

__all__ = ["ollama_usage", "openai_usage"]


def openai_usage(data: Mapping[str, Any]) -> Usage:
    """The counts in a ``chat.completion`` (or a stream's ``usage`` and ``timings`` put
    together in one mapping)."""
    usage, timings = _mapping(data.get("usage")), _mapping(data.get("timings"))
    prefilled, cached = _count(timings.get("prompt_n")), _count(timings.get("cache_n"))
    prompt = _count(usage.get("prompt_tokens"))
    if prompt is None and prefilled is not None:
        prompt = prefilled + (cached or 0)
    details = usage.get("prompt_tokens_details")
    if cached is None and isinstance(details, Mapping):
        cached = _count(details.get("cached_tokens"))
    if prefilled is None and cached is not None and prompt is not None:
        prefilled = max(0, prompt - cached)
    if prefilled is not None and cached is None:  # timings without cache_n: cannot say
        prefilled = None
    completion = _count(usage.get("completion_tokens"))
    if completion is None:
        completion = _count(timings.get("predicted_n"))
    return Usage(
        prompt or 0,
        completion or 0,
        prefilled,
        cached,
        _ms(timings.get("prompt_ms")),
        _ms(timings.get("predicted_ms")),
        _count(timings.get("draft_n")),
        _count(timings.get("draft_n_accepted")),
    )


def ollama_usage(data: Mapping[str, Any]) -> Usage:
    """The counts on Ollama's last ``/api/chat`` object (``done: true``)."""
    prompt = _count(data.get("prompt_eval_count")) or 0
    cached = _count(data.get("prompt_eval_cached_count"))
    prefilled = max(0, prompt - cached) if cached is not None else None
    return Usage(
        prompt,
        _count(data.get("eval_count")) or 0,
        prefilled,
        cached,
        _ns_to_ms(data.get("prompt_eval_duration")),
        _ns_to_ms(data.get("eval_duration")),
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any) -> int | None:
    return None if (number := _ms(value)) is None else int(number)


def _ms(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return round(float(value), 3)


def _ns_to_ms(value: Any) -> float | None:
    milliseconds = _ms(value)
    return None if milliseconds is None else round(milliseconds / 1e6, 3)
