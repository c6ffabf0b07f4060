"""How many parameters a GGUF model has, from its metadata, through llama-cpp-python's public
API (``Llama.metadata``): the embedded backend declares ``tiny`` from it."""

from __future__ import annotations

import re
from collections.abc import Mapping

TINY_PARAMS = 1_000_000_000
"""Models with fewer parameters than this are tiny: the loop gives them the tiny policy."""

TINY_MAX_TOKENS = 768
"""A tiny model's reply ceiling: enough for a small file."""

_LABEL = re.compile(r"^(?:(\d+)x)?(\d+(?:\.\d+)?)([KMBT])$", re.IGNORECASE)
_SCALE = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parameter_count(metadata: Mapping[str, str]) -> int:
    """The model's parameters: ``general.size_label`` (``270M``, ``1.5B``, ``8x7B``) when the
    GGUF has one, else an estimate from its dimensions (embeddings, and per block attention
    and feed-forward weights); 0 when neither is there (unknown: not tiny)."""
    label = _LABEL.match(str(metadata.get("general.size_label") or "").strip())
    if label:
        experts = int(label.group(1) or 1)
        return int(experts * float(label.group(2)) * _SCALE[label.group(3).lower()])
    arch = metadata.get("general.architecture", "")
    try:
        width = int(metadata[f"{arch}.embedding_length"])
        blocks = int(metadata[f"{arch}.block_count"])
        ff = int(metadata.get(f"{arch}.feed_forward_length") or 4 * width)
    except (KeyError, ValueError):
        return 0
    vocab = 32_000  # the vocabulary's size is not in the metadata llama-cpp-python hands out
    return vocab * width + blocks * (4 * width * width + 3 * width * ff)
