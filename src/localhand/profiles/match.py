"""Which profile a model name gets: by its family's patterns, over a name in any of its forms.

Models reach localhand under many names for the same weights: an Ollama tag (``qwen3:8b``,
``library/qwen3:8b``), a Hugging Face reference through Ollama
(``hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M``), a GGUF file (``/models/Qwen3-8B-Q4_K_M.gguf``), or
whatever llama-server's ``--alias`` or vLLM's ``--served-model-name`` says. The name is
normalised (lower case, the path and the ``.gguf`` suffix dropped, ``_`` and spaces as ``-``),
then the families' patterns are tried in the table's order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from localhand.profiles.model import GENERIC, Profile
from localhand.profiles.plugins import installed_profiles

_HUB_PREFIX = re.compile(r"^(?:https?://)?(?:hf\.co|huggingface\.co|registry\.ollama\.ai)/")


def normalise(name: str) -> str:
    """``name`` as the patterns see it: ``hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M`` ->
    ``qwen3-8b-gguf:q4-k-m``; ``/models/Llama-3.2-3B.Q4_K_M.gguf`` -> ``llama-3.2-3b.q4-k-m``."""
    text = name.strip().lower().replace("\\", "/")
    text = _HUB_PREFIX.sub("", text)
    # The last path part names the model: an org (unsloth/), a library/ prefix or a directory
    # says nothing about the family, and may mislead (a directory named after another model).
    text = text.rstrip("/").rsplit("/", 1)[-1]
    if text.endswith(".gguf"):
        text = text[: -len(".gguf")]
    return re.sub(r"[_\s]+", "-", text)


@lru_cache(maxsize=64)
def profile_for(model: str) -> Profile:
    """The profile for ``model``: the first of the installed profiles (the packages' own, see
    ``localhand.profiles.plugins``, then the built-in ones) with a pattern found in the name;
    ``GENERIC`` when there is none."""
    return first_match(normalise(model), installed_profiles())


def first_match(name: str, profiles: Sequence[Profile]) -> Profile:
    for profile in profiles:
        if any(re.search(pattern, name) for pattern in profile.patterns):
            return profile
    return GENERIC
