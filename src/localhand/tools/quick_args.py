"""Arguments that are already what the signature asks for, accepted without pydantic.

Validating through pydantic means importing it (about 85 ms) at the first tool call of a run,
the one slow step of an otherwise ~1 ms iteration. Most calls need no coercion at all: a
``str`` for a ``str``, an ``int`` for an ``int``. For a tool whose parameters are all plain
(``str``, ``int``, ``float``, ``bool``, a ``Literal`` of strings, any of them ``| None``),
``accept`` returns the arguments as pydantic would; for anything else (a ``"12"`` to coerce,
an unknown name, a missing argument, a list) it returns ``None`` and pydantic decides, so
coercion and every error message stay exactly pydantic's.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from localhand.tools.schema import optional_of, string_literal

_EXACT = (str, int, float, bool)


@dataclass(frozen=True, slots=True)
class _Param:
    name: str
    kind: Any
    """``str``, ``int``, ``float``, ``bool``, or the tuple of a ``Literal``'s strings."""
    required: bool
    default: Any
    nullable: bool


@dataclass(frozen=True, slots=True)
class QuickArguments:
    """The plain parameters of one tool (see the module docstring)."""

    params: tuple[_Param, ...]

    @classmethod
    def of(
        cls, parameters: list[inspect.Parameter], hints: dict[str, Any]
    ) -> QuickArguments | None:
        """For ``parameters`` that are all plain, else ``None``."""
        found = []
        for param in parameters:
            kind, nullable = _plain(hints.get(param.name))
            if kind is None:
                return None
            required = param.default is param.empty
            default = None if required else param.default
            if not required and not (default is None or type(default) in _EXACT):
                return None
            found.append(_Param(param.name, kind, required, default, nullable))
        return cls(tuple(found))

    def accept(self, given: Mapping[str, Any]) -> dict[str, Any] | None:
        """``given`` with defaults filled in, when it needs no coercion; else ``None``."""
        if not all(any(p.name == name for p in self.params) for name in given):
            return None  # an unknown argument: pydantic's refusal names the allowed ones
        accepted: dict[str, Any] = {}
        for param in self.params:
            if param.name not in given:
                if param.required:
                    return None
                accepted[param.name] = param.default
                continue
            value = _exact(param, given[param.name])
            if value is _NO:
                return None
            accepted[param.name] = value
        return accepted


_NO = object()


def _exact(param: _Param, value: Any) -> Any:
    """``value`` as pydantic returns it when its type is already right, else ``_NO``."""
    kind = type(value)
    if value is None:
        return None if param.nullable else _NO
    if isinstance(param.kind, tuple):  # a Literal of strings
        return value if kind is str and value in param.kind else _NO
    if param.kind is float:
        if kind is int and abs(value) >= 2**1023:  # float() would overflow: pydantic says why
            return _NO
        return float(value) if kind in (int, float) else _NO
    return value if kind is param.kind else _NO


def _plain(annotation: Any) -> tuple[Any, bool]:
    """(the plain kind of ``annotation``, whether it allows ``None``), or (None, False)."""
    kind, nullable = optional_of(annotation)
    if kind in _EXACT:
        return kind, nullable
    values = string_literal(kind)
    return (values, nullable) if values is not None else (None, False)
