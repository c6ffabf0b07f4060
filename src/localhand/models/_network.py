"""What the two network backends share above their transport: the connection's settings as
attributes of the backend (``model.request_timeout = 30`` works as it always has), listing the
server's models (``listed_names`` reads both servers' listings, for ``missing`` too), and
closing."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar, overload

from localhand.models.base import BaseChatModel
from localhand.types import Closing

if TYPE_CHECKING:
    from localhand.models.connection import Connection
    from localhand.models.transport import Transport

T = TypeVar("T")


class ConnectionSetting(Generic[T]):
    """A field of the backend's :class:`Connection` as an attribute: reading it reads the
    field, setting it replaces the connection (a frozen value) with one where only that field
    differs, which applies from the next request."""

    def __init__(self, field: str | None = None) -> None:
        self._field = field or ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._field = self._field or name

    @overload
    def __get__(self, backend: None, owner: type) -> Self: ...

    @overload
    def __get__(self, backend: NetworkBackend, owner: type) -> T: ...

    def __get__(self, backend: NetworkBackend | None, owner: type) -> Any:
        if backend is None:
            return self
        return getattr(backend.transport.connection, self._field)

    def __set__(self, backend: NetworkBackend, value: T) -> None:
        transport = backend.transport
        change: dict[str, Any] = {self._field: value}
        transport.connection = replace(transport.connection, **change)


class NetworkBackend(BaseChatModel, Closing):
    """The base of ``OllamaModel`` and ``OpenAICompatModel``: a model name and a transport."""

    streams_replies = True

    transport: Transport
    """Sends the backend's requests: client, timeouts, retries, streaming."""

    request_timeout = ConnectionSetting[float]()
    first_request_timeout = ConnectionSetting[float]()
    connect_timeout = ConnectionSetting[float]()
    metadata_timeout = ConnectionSetting[float]()
    stream_idle_timeout = ConnectionSetting[float]()
    max_attempts = ConnectionSetting[int]()
    backoff = ConnectionSetting[float]()
    max_reply_tokens = ConnectionSetting["int | None"]()

    @property
    def reply_ceiling(self) -> int | None:
        return self.max_reply_tokens

    @property
    def connection(self) -> Connection:
        """The settings the next request goes out with."""
        return self.transport.connection

    def list_models(self) -> list[str]:
        """The names of the models the server lists (Ollama's ``/api/tags``, ``/v1/models``)."""
        return listed_names(self.transport.fetch("GET", self.transport.wire.models_path))

    def close(self) -> None:
        """Close the connections kept alive; the backend stays usable (it opens new ones)."""
        self.transport.close()


def listed_names(data: Any) -> list[str]:
    """The model names in a listing: Ollama's ``/api/tags`` (``models[].model`` or ``name``) or
    an OpenAI-compatible ``/v1/models`` (``data[].id``; Ollama's says ``null`` when empty)."""
    if not isinstance(data, dict):
        return []
    items = data.get("models") if "models" in data else data.get("data")
    names = []
    for item in items or [] if isinstance(items, list | None) else []:
        if isinstance(item, dict):
            name = item.get("model") or item.get("name") or item.get("id")
            if isinstance(name, str) and name:
                names.append(name)
    return names
