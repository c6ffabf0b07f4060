"""Whether the server threw its prompt cache away although the conversation only grew.

localhand's history is append-only, so each request extends the last and a server with a
prompt cache should prefill only the new tokens. Server settings silently defeat that: a
sliding-window model (Gemma 2/3, gpt-oss) served by llama-server without ``--swa-full``, a
hybrid one without context checkpoints, ``cache_prompt`` turned off (a proxy's default, or
``--no-cache-prompt``). The user then pays the whole prompt again every turn; the fix named
is ``models/advice``'s, the same that ``localhand doctor`` names. This module is the detector:
a pure function over each request's (prompt tokens, cached tokens) as the server counted them,
and a small watcher that says it once per run. The figures come from the server
(llama-server ``timings.cache_n``, ``usage.prompt_tokens_details.cached_tokens``); where it
says nothing (None) nothing is concluded, never guessed.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from localhand.models.advice import growing_prefix_fix

MIN_PREFIX = 256
"""Below this many tokens of prefix a miss costs little; not worth a warning."""
REUSED_SHARE = 0.5
"""A request reuses the cache when at least this share of the previous prompt was cached."""
MISSES_TO_WARN = 2
"""Consecutive misses on a growing prefix before warning: one can be an eviction."""

WARNING = (
    "the server re-processed the whole prompt on {misses} requests in a row although the "
    "conversation only grew ({previous:,} tokens could have come from its cache), so every "
    "turn pays the full prefill. On llama-server: {fix}; other servers: turn on prefix/prompt "
    "caching"
)


def cache_thrown_away(
    requests: Sequence[tuple[int, int | None]], model: str | None = None
) -> str | None:
    """The warning when the last ``MISSES_TO_WARN`` requests each grew the previous prompt but
    reused less than ``REUSED_SHARE`` of it; None when the cache works or nobody can tell.

    ``requests``: (prompt tokens, cached tokens) per request, in order; cached None: unknown.
    ``model``: the model's name, which says which server flag applies.
    A prompt shorter than the previous one (a compaction) is not a growing prefix.
    """
    if len(requests) < MISSES_TO_WARN + 1:
        return None
    misses, previous = 0, 0
    for (before, _), (prompt, cached) in itertools.pairwise(requests):
        grew = prompt >= before >= MIN_PREFIX
        if not grew or cached is None or cached >= before * REUSED_SHARE:
            misses = 0
            continue
        misses += 1
        previous = before
    if misses < MISSES_TO_WARN:
        return None
    fix = growing_prefix_fix(model)  # the model's own fix; each one only when it is unknown
    fix += " (`localhand doctor` checks it)" if model else ""
    return WARNING.format(misses=misses, previous=previous, fix=fix)


@dataclass
class CacheWatch:
    """Feeds each request's figures to ``cache_thrown_away`` and returns its warning once."""

    requests: list[tuple[int, int | None]] = field(default_factory=list)
    warned: bool = False

    def observe(
        self, prompt_tokens: int, cached_tokens: int | None, model: str | None = None
    ) -> str | None:
        """The warning, the first time the figures so far call for it; else None."""
        self.requests.append((prompt_tokens, cached_tokens))
        del self.requests[: -(MISSES_TO_WARN + 1)]  # only the last few decide
        if self.warned:
            return None
        warning = cache_thrown_away(self.requests, model)
        self.warned = warning is not None
        return warning
