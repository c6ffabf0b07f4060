"""What ``localhand doctor`` finds on a server, as values (``models/checkup`` finds them): a
``Finding`` is an ``error`` (localhand cannot use the server as asked), a ``warning`` (it can,
at a cost the fix removes) or a ``note`` (said, not counted: nothing needs changing); its
``basis`` is what it rests on: the field read, or the probe's figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from localhand.models.missing import has_models, pick_tool_model

if TYPE_CHECKING:
    from localhand.models.catalog import Place

Severity = Literal["error", "warning", "note"]


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


def missing(place: Place, model: str, fix: str, basis: str) -> Finding:
    """The model is not on the server: what it has, in the words of the run's own error."""
    listed = has_models(
        [m.name for m in place.models], pick_tool_model([(m.name, m.tools) for m in place.models])
    )
    return Finding("error", f"{model} is not on this server. {listed}", fix, basis)
