"""The GGUF files the embedded backend can run, for :mod:`localhand.models.catalog`: the one
configured (``gguf`` setting, or ``--model`` given as a ``.gguf`` path) and the packaged tiny
model. Nothing is loaded: a listing must stay quick."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from localhand.models.catalog import Listed, Place, listed_file


def embedded_place(settings: Any, profile: Callable[[str], str]) -> Place:
    from localhand.models.auto import EMBEDDED_N_CTX, TINY_PACKAGE, default_gguf
    from localhand.models.embedded import INSTALL_HINT, embedded_available

    window = min(EMBEDDED_N_CTX, int(getattr(settings, "num_ctx_max", EMBEDDED_N_CTX)))
    place = Place("embedded", "this machine", "embedded (llama-cpp-python)")
    models: list[Listed] = []
    missing: list[str] = []
    for path in _configured(settings):
        if path.is_file():
            models.append(listed_file(path, window, profile, "configured"))
        else:
            missing.append(f"the configured GGUF {path} does not exist")
    try:
        tiny = default_gguf()
    except OSError as exc:  # the package is there but its parts are not
        tiny, _ = None, missing.append(f"{TINY_PACKAGE} is broken: {exc}")
    if tiny is not None and all(m.where != str(tiny) for m in models):
        models.append(listed_file(tiny, window, profile, f"tiny demo model ({TINY_PACKAGE})"))
    place.models = models
    if not embedded_available():
        missing.append(f"llama-cpp-python is not installed: {INSTALL_HINT}")
    elif not models:
        missing.append(f"no GGUF configured and {TINY_PACKAGE} is not installed")
    place.error = "; ".join(missing) or None
    return place


def _configured(settings: Any) -> list[Path]:
    paths = []
    for value in (getattr(settings, "gguf", None), getattr(settings, "model", None)):
        if value and str(value).lower().endswith(".gguf"):
            path = Path(str(value)).expanduser()
            if path not in paths:
                paths.append(path)
    return paths
