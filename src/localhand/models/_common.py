"""What every backend shares: the time limits' hints, and the two signals an attempt raises to
ask the transport's retries for another (``Retry``, ``Garbled``). Light on purpose: the
embedded backend imports it too, and must not load the HTTP client."""

from __future__ import annotations

import time
from typing import Any

from localhand.errors import ModelError
from localhand.models.base import ChatOptions

OUT_OF_TIME_HINT = (
    "the task's wall clock: that was all the time left of the task; give the task a longer "
    "--timeout"
)
"""Each time limit's hint names the limit, so that an error says which one was hit."""


def time_limit_hint(loaded: bool, loads: str = "loads") -> str:
    """What a request that timed out hit: the per-request limit, or the longer one for the
    first request (``loads``: how the backend words what the first request does)."""
    if loaded:
        return "the per-request time limit: raise request_timeout"
    return (
        f"the first request's time limit, since it {loads} the model: raise "
        "first_request_timeout, 3 × request_timeout from the settings"
    )


class Retry(Exception):
    """Carries a retryable error out of one attempt, to raise once the attempts run out."""

    def __init__(self, error: ModelError) -> None:
        super().__init__(str(error))
        self.error = error


class Garbled(Exception):
    """An answer, or a line of a streamed one, that is not the server's JSON; the message says
    so for a person. Retried, as a cut connection is, while nothing of the answer was handed
    out: a proxy's error page or a garbled line may not come again."""


def positive(value: Any) -> int | None:
    """``value`` as a whole number above zero (a window, a slot count, a size), else None:
    what a server's JSON says may be a float, a boolean, a string or nothing."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return int(value)


def deadline_of(options: ChatOptions | None) -> float | None:
    """The ``time.monotonic()`` by which the request must be done, if the options set one."""
    if options is None or options.timeout is None:
        return None
    return time.monotonic() + options.timeout


def logged(message: str) -> None:
    """A warning of a model built without ``on_warning``, to the ``localhand`` logger."""
    import logging  # only then: a run passes its own on_warning, and logging costs ~3 ms

    logging.getLogger("localhand").warning(message)
