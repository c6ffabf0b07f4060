"""What a :class:`~localhand.testing.FakeOllama` script may hold besides replies: scripted
failures (``Fault``), and the refusals the server answers with on its own (``Refusal``).
Shared by the native endpoints and ``/v1``. Private: import what you need from
``localhand.testing``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Item = Any
"""A script item: ``dict`` | ``str`` | :class:`Fault` | ``Callable[[dict], Item]``."""
BAD_GATEWAY_PAGE = b"<html><body><h1>502 Bad Gateway</h1>nginx</body></html>"
"""What a ``non_json`` fault answers, on either API: a proxy's page where JSON was due."""


@dataclass(frozen=True, slots=True)
class Fault:
    """A scripted failure for one ``/api/chat`` request. Build one with the class methods."""

    kind: Literal["status", "hang", "reset", "non_json", "stream_error"]
    code: int = 500
    error: str = ""
    seconds: float = 0.0
    then: Item = None

    @classmethod
    def status(cls, code: int, error: str | None = None) -> Fault:
        """Answer ``code`` with Ollama's error body ``{"error": error}``."""
        default = {
            500: "llama runner process has terminated: exit status 2",
            503: "server busy, please try again.  maximum pending requests exceeded",
        }.get(code, f"fake ollama: HTTP {code}")
        return cls("status", code=code, error=error or default)

    @classmethod
    def hang(cls, seconds: float = 3600.0, then: Item = None) -> Fault:
        """Say nothing for ``seconds`` (or until the server closes), then drop the connection,
        or answer with ``then`` if given (a slow but successful reply)."""
        return cls("hang", seconds=seconds, then=then)

    @classmethod
    def reset(cls) -> Fault:
        """Send the headers and part of the body, then cut the connection: half a JSON reply,
        or, when streaming, two deltas (a connection dropped mid-answer)."""
        return cls("reset")

    @classmethod
    def non_json(cls) -> Fault:
        """Answer 200 with an HTML page, as a misconfigured proxy would."""
        return cls("non_json", code=200)

    @classmethod
    def stream_error(cls, error: str = "an error was encountered while running the model") -> Fault:
        """Fail while generating: a streamed reply gets some chunks then an ``{"error"}`` line;
        an unstreamed one gets 500, as Ollama does."""
        return cls("stream_error", error=error)


@dataclass(frozen=True, slots=True)
class Refusal:
    code: int  # an error answer: the HTTP status and Ollama's error text
    error: str
