"""How a network backend reaches its server: the settings both backends share, as one value.

``OllamaModel`` and ``OpenAICompatModel`` take a :class:`Connection` as ``connection=``, or
build one from the same settings given as keywords (``request_timeout=60``...), which is what
``session.backend`` and older callers do. A keyword given along with a connection wins over the
connection's field, so a shared connection can be adjusted for one backend::

    server = Connection("http://gpu-box:11434", request_timeout=120, max_attempts=5)
    model = OllamaModel("qwen3:8b", connection=server)
    probe = OllamaModel("qwen3:8b", connection=server, max_attempts=1)

What the timeouts, attempts and idle timeout do is in ``models.transport``; how each backend
reads the address, the key and the reply ceiling is in its own module.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from localhand.models.base import DEFAULT_MAX_REPLY_TOKENS

__all__ = ["Connection", "ConnectionSettings", "connection_from"]


@dataclass(frozen=True, slots=True)
class Connection:
    """Where the server is and how patiently to talk to it. Frozen: change a setting with
    ``dataclasses.replace``, or through the backend's attribute of the same name."""

    host: str | None = None
    """The server's address as given; None: the backend's variable (``OLLAMA_HOST``,
    ``OPENAI_BASE_URL``), else its default. Each backend reads it its own way."""
    api_key: str | None = field(default=None, repr=False)  # never in a log line
    """Sent as a bearer token; None: ``OLLAMA_API_KEY`` (else no key), or ``OPENAI_API_KEY``
    (else a placeholder, which local servers ignore)."""
    request_timeout: float = 300.0
    """Seconds a reply may take once the model has answered once."""
    first_request_timeout: float = 900.0
    """Seconds the first reply may take: the server may be loading the model."""
    connect_timeout: float = 10.0
    """Seconds to open a connection."""
    metadata_timeout: float = 10.0
    """Seconds for a request that is not a reply: listing models, ``/api/show``..."""
    stream_idle_timeout: float = 120.0
    """Seconds of silence after the first chunk of a streamed answer before the server is
    taken as stuck."""
    max_attempts: int = 3
    """Attempts in all for a request that fails in a way another try may cure (at least 1)."""
    backoff: float = 0.5
    """Seconds before the second attempt, doubling for each one after."""
    max_reply_tokens: int | None = DEFAULT_MAX_REPLY_TOKENS
    """The reply ceiling, thinking included (``num_predict`` or ``max_tokens`` on the wire);
    None sends none, and the servers' default is unlimited."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_attempts", max(1, self.max_attempts))


class ConnectionSettings(TypedDict, total=False):
    """:class:`Connection`'s fields as a backend's keywords (the address is its ``host``
    argument). Each one given replaces that field of the connection."""

    api_key: str | None
    request_timeout: float
    first_request_timeout: float
    connect_timeout: float
    metadata_timeout: float
    stream_idle_timeout: float
    max_attempts: int
    backoff: float
    max_reply_tokens: int | None


def connection_from(
    connection: Connection | None, host: str | None, settings: ConnectionSettings
) -> Connection:
    """``connection`` (default: the defaults) with ``host`` and ``settings`` where given."""
    given: dict[str, Any] = dict(settings)
    if host is not None:
        given["host"] = host
    return replace(connection or Connection(), **given)
