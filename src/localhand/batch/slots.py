"""How many tasks each endpoint serves at once, and saying so when the batch asked for more.

An endpoint's slots are what ``--slots`` or ``slots =`` in ``[[pool.endpoints]]`` gives; when
neither does, what the server publishes, and 1 when it publishes nothing. Only llama-server
publishes it: ``GET /props`` (at the server's root, not under ``/v1``; public even with
``--api-key``) answers ``{"total_slots": N, "default_generation_settings": {...}, ...}``, N
being its ``--parallel``. Ollama (``OLLAMA_NUM_PARALLEL``) and vLLM (``--max-num-seqs``) say
nothing about theirs, so on them the pool assumes 1 unless told.

A batch with ``--concurrency`` above the pool's slots runs no faster than the slots allow: the
other tasks wait for a free one. That looks like a batch running one task at a time for no
reason, so ``slot_warning`` says it before the batch starts, and how to give more slots.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from localhand.models._served_context import server_props
from localhand.models._slots import published_total

if TYPE_CHECKING:
    from localhand.batch.endpoints import Endpoint
    from localhand.batch.pool import EndpointStatus

SlotsFrom = Literal["given", "published", "default"]

HOW_TO_GIVE_SLOTS = (
    "If the server serves more at once (Ollama's OLLAMA_NUM_PARALLEL, llama-server's "
    "--parallel, vLLM's --max-num-seqs), say how many with --slots N, or slots = N in the "
    "endpoint's [[pool.endpoints]] table of localhand.toml."
)


def published_slots(endpoint: Endpoint, timeout: float = 5.0) -> int | None:
    """The slots an OpenAI-compatible server publishes (llama-server's ``GET /props``
    ``total_slots``), or None: an Ollama endpoint, a server without ``/props`` (vLLM, LM
    Studio answer 404), or one that does not answer. Never raises: the slots are a hint."""
    if endpoint.backend != "openai":
        return None  # Ollama has no /props: a request would only be a 404

    return published_total(server_props(endpoint.url, timeout))


def slot_warning(concurrency: int | None, endpoints: Sequence[EndpointStatus]) -> str | None:
    """What to tell the user when ``--concurrency`` asks for more tasks at once than the
    endpoints have slots, or None when it does not (or was not given: it then defaults to
    the slots)."""
    total = sum(e.slots for e in endpoints)
    if concurrency is None or concurrency <= total:
        return None
    each = "; ".join(f"{e.url}: {e.slots} ({_why(e.slots_from)})" for e in endpoints)
    at_once = "one at a time" if total == 1 else f"{total} at a time"
    slots = "1 slot" if total == 1 else f"{total} slots"
    return (
        f"--concurrency {concurrency} asks for {concurrency} tasks at once, but the pool has "
        f"{slots} ({each}), so the tasks run {at_once} and the rest wait. {HOW_TO_GIVE_SLOTS}"
    )


def _why(source: SlotsFrom) -> str:
    return {
        "given": "as configured",
        "published": "as the server's /props says",
        "default": "the default: not configured, and the server does not publish it",
    }[source]
