"""The model and server options: one value, declared once, taken by every command that talks
to a model (``run``, ``plan``, ``batch``, ``eval``, ``mcp``, ``acp``, ``config``, ``models``).

``ModelOptions.add_to`` declares the flags on a command's parser (each command names the ones
it offers and how its own differ: a pool's repeatable ``--host``, say); ``from_args`` reads
them back from the parsed namespace; ``applied_to`` puts them over the settings as flags, the
last layer of ``localhand.config.settings`` (flags > environment > files > defaults).

Import-light: the command line parses with this before anything of a run is loaded.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localhand.config.settings import Settings

BACKENDS = ("auto", "ollama", "openai", "embedded")
"""Where the model runs (``--backend``, ``backend`` in the settings, which read it from here)."""
APPROVE_POLICIES = ("never", "dangerous", "always")
"""Which commands need a person's approval (``--approve``, ``approve`` in the settings)."""
PLAN_MODES = ("teacher", "planner", "agentic")  # --mode, [plan] default_mode: plan.executor's


NUMBERS: dict[str, tuple[Any, ...]] = {
    "num_ctx_max": (int, 512),
    "saved_slots": (int, 0),  # 0: keep none
    "request_timeout": (float, 1),
    "max_reply_tokens": (int, 1),
    "daily_token_budget": (int, 1),
    "price_in": (float, 0),
    "price_out": (float, 0),
    "think_budget": (int, 0),  # 0: no budget
    "delegate_share": (float, 0, 1),  # 0: no delegate tool
    "max_jobs": (int, 0),  # 0: no background command
}
"""The numeric settings: each one's type, least value and most (if any), for its key, variable
and flag."""


def checked(value: Any, kind: Callable[[Any], float], low: float, high: float | None = None) -> Any:
    """``value`` as ``kind`` (``int`` or ``float``) from ``low`` to ``high``, inclusive: from a
    flag's or variable's text or a TOML number; never a TOML ``true`` (``true`` is not a number,
    though ``int`` takes it as 1) nor a fraction where a whole number is asked for (which ``int``
    would cut). A ``ValueError`` says what is wrong."""
    noun = "a whole number" if kind is int else "a number"
    fraction = kind is int and isinstance(value, float) and not value.is_integer()
    try:
        if isinstance(value, bool) or fraction:
            raise ValueError
        number = kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not {noun}") from None
    if not (number >= low and (high is None or number <= high)):  # NaN fails too
        bounds = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
        raise ValueError(f"must be {bounds}, not {value}")
    return number


def number(
    kind: Callable[[str], float], low: float, high: float | None = None
) -> Callable[[str], float]:
    """An argument type: ``kind`` (``int`` or ``float``) from ``low`` to ``high``, inclusive."""

    def parse(text: str) -> float:
        try:
            return checked(text, kind, low, high)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = kind.__name__  # what argparse calls the type in its own messages
    return parse


FLAGS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "model": (("-m", "--model"), {"metavar": "NAME", "help": "Model name, e.g. qwen3:8b."}),
    "backend": (("--backend",), {"choices": BACKENDS, "help": "Where the model runs."}),
    "host": (
        ("--host",),
        {"metavar": "URL", "help": "Server URL (default: OLLAMA_HOST or localhost:11434)."},
    ),
    "request_timeout": (
        ("--request-timeout",),
        {
            "type": number(*NUMBERS["request_timeout"]),
            "metavar": "SECONDS",
            "help": "Most seconds one model request may take; the first gets three times as "
            "long, since it may load the model (default: 300, or request_timeout in "
            "localhand.toml, LOCALHAND_REQUEST_TIMEOUT; the design notes' 120 is "
            "--request-timeout 120).",
        },
    ),
    "max_reply_tokens": (
        ("--max-reply-tokens",),
        {
            "type": number(*NUMBERS["max_reply_tokens"]),
            "metavar": "N",
            "help": "Most tokens one reply may have, thinking included; a reply cut there runs "
            "nothing and the model is told to answer shorter (default: 4096, or "
            "max_reply_tokens in localhand.toml, LOCALHAND_MAX_REPLY_TOKENS).",
        },
    ),
    "watch_replies": (
        ("--watch-replies",),
        {
            "action": "store_true",
            "default": None,
            "help": "Read each reply as it streams, show its progress, and stop one that "
            "repeats itself within seconds (default: off, or watch_replies in localhand.toml, "
            "LOCALHAND_WATCH_REPLIES).",
        },
    ),
    "think_budget": (
        ("--think-budget",),
        {
            "type": number(*NUMBERS["think_budget"]),
            "metavar": "N",
            "help": "Most tokens a reply may think before it is stopped and asked again with "
            "thinking off, what it reasoned kept (default: the model family's, 2048 for most "
            "thinking models; 0: no budget). The reply is read as a stream while it applies.",
        },
    ),
}
"""Each option's flags and ``add_argument`` keywords, in the order ``--help`` lists them."""

SERVER = ("model", "backend", "host", "request_timeout", "max_reply_tokens")
"""What every command that drafts or runs a task with one model takes."""
LOOP = (*SERVER, "watch_replies", "think_budget")
"""What every command that runs the tool loop takes besides."""
POOL_HOSTS = {
    "action": "append",
    "dest": "hosts",
    "help": "A model server for the pool; repeatable. Replaces the toml pool.",
}
"""``--host`` of a command that spreads its runs over a pool of servers (batch, eval): the
pool's hosts, not one server for the settings."""


@dataclass(frozen=True, slots=True)
class ModelOptions:
    """The model and server flags of one command line; ``None``: not given (the settings'
    layers below decide)."""

    model: str | None = None
    backend: str | None = None
    host: str | None = None
    request_timeout: float | None = None
    max_reply_tokens: int | None = None
    watch_replies: bool | None = None
    think_budget: int | None = None

    @staticmethod
    def add_to(
        parser: argparse.ArgumentParser,
        names: tuple[str, ...] = SERVER,
        **changed: Mapping[str, Any],
    ) -> None:
        """Declare the options ``names`` on ``parser``; ``changed`` maps an option to the
        ``add_argument`` keywords in which this command's differs (its help, say)."""
        for name in names:
            flags, keywords = FLAGS[name]
            parser.add_argument(*flags, **{**keywords, **changed.get(name, {})})

    @classmethod
    def from_args(cls, namespace: argparse.Namespace) -> ModelOptions:
        """The options parsed into ``namespace`` (those a command does not offer: ``None``)."""
        return cls(**{f.name: getattr(namespace, f.name, None) for f in fields(cls)})

    def applied_to(self, settings: Settings) -> Settings:
        """``settings`` with these options over them, as flags: the top layer."""
        return settings.with_overrides(**asdict(self))
