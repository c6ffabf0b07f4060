"""The models a :class:`~localhand.testing.FakeOllama` serves: what each can do (tools,
thinking, its window) and how Ollama finds one by name. Private: import what you need from
``localhand.testing``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_REGISTRY = "registry.ollama.ai"


@dataclass(frozen=True, slots=True)
class _Model:
    name: str
    context_length: int = 40960
    tools: bool = True
    thinking: bool = False
    family: str = ""
    parameter_size: str = "8.2B"
    quantization_level: str = "Q4_K_M"
    num_ctx: int | None = None  # a Modelfile's PARAMETER num_ctx, if any

    @property
    def capabilities(self) -> list[str]:
        return ["completion"] + ["tools"] * self.tools + ["thinking"] * self.thinking

    @property
    def registry_name(self) -> str:
        # How Ollama names a model in capability errors: registry.ollama.ai/library/gemma2:2b
        return f"{_REGISTRY}/{self.name if '/' in self.name else 'library/' + self.name}"


def _canonical(name: str) -> str:
    """Ollama's lookup: case-insensitive, and a missing tag means ``:latest``."""
    name = name.strip().lower()
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _make_model(name: str, spec: Mapping[str, Any]) -> _Model:
    keys = ("context_length", "tools", "thinking", "parameter_size", "quantization_level")
    unknown = set(spec) - {*keys, "family", "num_ctx"}
    if unknown:  # a typo would otherwise silently test the defaults
        raise ValueError(f"unknown model setting(s) for {name}: {', '.join(sorted(unknown))}")
    base = name.split(":")[0].rsplit("/", 1)[-1]
    family = str(spec.get("family") or (re.match(r"[a-z]+\d*", base) or [base])[0])
    return _Model(
        name, family=family, num_ctx=spec.get("num_ctx"), **{k: spec[k] for k in keys if k in spec}
    )
