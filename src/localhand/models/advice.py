"""What localhand advises about a server: which flag makes a model's prompt cache work (the
one place that says it, for the warning a run gives when the cache is thrown away,
``run/cache_reuse``, and for ``localhand doctor``, ``models/checkup``), and doctor's findings
as values: a ``Finding`` is an ``error`` (localhand cannot use the server as asked), a
``warning`` (it can, at a cost the fix removes), a ``note`` or a ``suggestion`` (uncounted);
its ``basis`` is what it rests on (the field read, or the probe's figures).

The flag depends on how the model attends: a sliding-window model (Gemma 2/3, gpt-oss) keeps
only its last window of keys unless llama-server has ``--swa-full``; a hybrid or recurrent
one (Qwen3.5/3.6, Qwen3-Next, Granite 4, LFM2, Falcon-H1, Nemotron-H, Jamba, Mamba, RWKV) has a
state that cannot be rolled back, so only context checkpoints let it resume a prefix. The
family is read from the model's name (llama-server's alias or GGUF file name, Ollama's tag):
no server reports it; ``doctor``'s probe then judges what the server really does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

SWA_FULL = "--swa-full"
CHECKPOINTS = "--ctx-checkpoints 32"
CACHE_PROMPT = "keep cache_prompt on (no --no-cache-prompt) and --cache-reuse 256"
CACHED_TOKENS = "--enable-prompt-tokens-details"
SLOT_SAVE = "--slot-save-path DIR"
SPEC_NGRAM = "--spec-type ngram-simple"

_WINDOWS: tuple[tuple[str, int], ...] = (("gemma-3-270m", 512), ("gemma-3-1b", 512))
_WINDOWS += (("gemma-3n", 512), ("gemma-3", 1024), ("gemma-2", 4096), ("gpt-oss", 128))
_WINDOWS += (("cohere2", 4096), ("command-r7b", 4096))
"""Sliding windows by family, as their GGUFs set ``attention.sliding_window``; first match."""
_HYBRID: tuple[str, ...] = (
    "qwen3.5",
    "qwen3.6",
    "qwen3-next",
    "qwen3next",
    "granite-4",
    "granite4",
    "lfm2",
)
_HYBRID += ("falcon-h1", "nemotron-h", "jamba", "mamba", "rwkv")


def _family(name: str) -> str:
    """``Gemma3:270m``, ``gemma-3-270m-it-Q4_K_M.gguf``, ``google/gemma3`` → one spelling."""
    name = name.lower().replace("_", "-").replace(":", "-").rsplit("/", 1)[-1]
    return name.replace("gemma3", "gemma-3").replace("gemma2", "gemma-2")


def sliding_window(name: str) -> int | None:
    """The model's sliding window in tokens, when its family has one; else None."""
    family = _family(name)
    return next((window for prefix, window in _WINDOWS if prefix in family), None)


def hybrid(name: str) -> bool:
    """Whether the model is hybrid or recurrent (its state cannot be rolled back)."""
    return any(part in _family(name) for part in _HYBRID)


def growing_prefix_fix(name: str | None) -> str:
    """What makes llama-server reuse a growing conversation for model ``name`` (None: any)."""
    if name and sliding_window(name):
        return SWA_FULL
    if name and hybrid(name):
        return CHECKPOINTS
    if name:
        return CACHE_PROMPT
    return (
        f"{SWA_FULL} for a sliding-window model (Gemma 2/3, gpt-oss), {CHECKPOINTS} for a "
        f"hybrid or recurrent one (Qwen3.5/3.6, Granite 4, LFM2), else {CACHE_PROMPT}; "
        "`localhand doctor` says which applies"
    )


Severity = Literal["error", "warning", "note", "suggestion"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing doctor found: what it is, what fixes it (as typed), what it rests on."""

    severity: Severity
    what: str
    fix: str
    basis: str = ""


@dataclass(frozen=True, slots=True)
class Needs:
    """What localhand will ask of a server: ``tokens`` of window for a run (``first_prompt``
    plus its growth and a reply), the ``model`` localhand runs (``model_given``: named by
    the user, so other servers than Ollama must serve it too), the batch ``concurrency``
    configured, localhand's own ``num_ctx_max`` for Ollama."""

    tokens: int
    first_prompt: int
    model: str
    model_given: bool = False
    concurrency: int | None = None
    num_ctx_max: int = 32768
    probe: bool = True
    named: bool = False
    """Whether the user named the server (``--host``, ``--backend``): then silence is an error."""

    def window(self, slots: int = 1) -> int:
        """The window to ask for: the power of two that holds a run, for ``slots`` slots."""
        return slots * (1 << max(0, self.tokens - 1).bit_length())

    @property
    def how_much(self) -> str:
        return (
            f"a run needs about {self.tokens:,} tokens (its first prompt, {self.first_prompt:,}, "
            "plus a run's growth and one reply)"
        )


@dataclass(slots=True)
class Checkup:
    """One server and what doctor found there."""

    url: str
    backend: str
    model: str | None
    findings: list[Finding] = field(default_factory=list)
    reached: bool = True

    def as_json(self, verbose: bool = False) -> dict[str, Any]:
        keys = ("severity", "what", "fix", "basis")[: 4 if verbose else 3]
        listed = [{k: getattr(f, k) for k in keys} for f in self.findings]
        return {"url": self.url, "backend": self.backend, "model": self.model, "findings": listed}
