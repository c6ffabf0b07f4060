"""OpenTelemetry traces of each run, for the tracing stack of the program localhand runs in.

The switch (``tracing_on``): ``[telemetry] otel = true`` in the user's config, or
``LOCALHAND_OTEL=1``; with neither given, on when the host program has already imported
``opentelemetry.trace`` (it traces, so localhand's runs join its traces); ``otel = false`` turns
it off even then. The keys are never taken from a workspace file
(``localhand.config.workspace_keys``).

Off, or without the ``otel`` extra: nothing of OpenTelemetry is imported and a run costs
nothing more. On without the package: one warning saying how to install it, and the run goes
on untraced. localhand only speaks the API (``opentelemetry-api``): where the spans go (an
exporter, an endpoint) is the host's SDK's business (``opentelemetry-instrument`` for the
command line).

The spans (``localhand.telemetry.spans``) follow the GenAI semantic conventions of the version
in ``spans.SEMCONV_VERSION``; those are still in development and change from release to
release.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localhand.config.settings import Settings
    from localhand.events import EventBus
    from localhand.run.task import Task

INSTALL = "pip install 'localhand[otel]'"

CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""OpenTelemetry's own switch for message content in GenAI spans; localhand honours it too."""

_warned_missing = False
_traced: ContextVar[Any] = ContextVar("localhand_traced_run", default=None)
"""The spans of the run being traced in this context (``traced_run``), for ``backend_chosen``."""


def tracing_on(settings: Settings) -> bool:
    """Whether runs are traced: as the user set it, else when the host already traces."""
    if settings.otel is not None:
        return settings.otel
    return "opentelemetry.trace" in sys.modules


def content_on(settings: Settings, env: dict[str, str] | None = None) -> bool:
    """Whether the spans carry the conversation: ``[telemetry] content``,
    ``LOCALHAND_OTEL_CONTENT`` or OpenTelemetry's own variable set to true."""
    environ = os.environ if env is None else env
    said = environ.get(CONTENT_VARIABLE, "").strip().lower()
    return settings.otel_content or said in ("true", "1", "yes", "on")


@contextmanager
def traced_run(
    task: Task, settings: Settings, bus: EventBus, warn: Callable[[str], None]
) -> Iterator[None]:
    """Trace the run in the block when tracing is on: its ``invoke_agent`` span spans the block,
    the spans of its model requests and tool calls come from its events on ``bus``."""
    if not tracing_on(settings):
        yield
        return
    try:
        from localhand.telemetry.spans import RunSpans  # off the first request's path
    except ImportError:
        _warn_missing(warn)
        yield
        return
    settings = settings.with_overrides(model=task.model, backend=task.backend)
    spans = RunSpans(
        task_id=task.id,
        model=settings.model,
        provider=provider_name(settings),
        content=content_on(settings),
        description=task.description,
    )
    unsubscribe = bus.subscribe(spans)
    current = _traced.set(spans)
    try:
        yield
    except BaseException as exc:
        spans.close(error=type(exc).__name__)
        raise
    else:
        spans.close()
    finally:
        _traced.reset(current)
        unsubscribe()


def backend_chosen(server_kind: str) -> None:
    """The backend the run's model is on (``ChatModel.server_kind``), once it is built: the
    traced run's spans name it, since ``--backend auto`` falls back to the embedded model when
    no Ollama answers. Nothing when the run is not traced, or for a kind without a name."""
    spans = _traced.get()
    provider = _KINDS.get(server_kind)
    if spans is not None and provider is not None:
        spans.name_provider(provider)


def _warn_missing(warn: Callable[[str], None]) -> None:
    """Once a process: tracing is on but the API is not installed."""
    global _warned_missing
    if _warned_missing:
        return
    _warned_missing = True
    warn(
        "OpenTelemetry tracing is on ([telemetry] otel or LOCALHAND_OTEL) but opentelemetry-api "
        f"is not installed, so this run is not traced; install it with: {INSTALL}"
    )


_KINDS = {"ollama": "ollama", "embedded": "llama_cpp"}
"""The conventions' ``gen_ai.provider.name`` of each backend a server names as its own
(``ChatModel.server_kind``); any other (an OpenAI-compatible server) keeps the settings' name."""


def provider_name(settings: Settings) -> str:
    """``gen_ai.provider.name``: the backend the settings ask for. ``auto`` is named as what it
    tries first: the embedded model for a model given as a ``.gguf`` path, else ``ollama``,
    until the model is built (``backend_chosen``)."""
    if settings.backend == "auto":
        return "llama_cpp" if settings.model.endswith(".gguf") else "ollama"
    return _KINDS.get(settings.backend, settings.backend)


__all__ = [
    "CONTENT_VARIABLE",
    "INSTALL",
    "backend_chosen",
    "content_on",
    "provider_name",
    "traced_run",
    "tracing_on",
]
