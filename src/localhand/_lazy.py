"""Names a package re-exports, loaded on first use (PEP 562), so that importing the package, or
one module of it, does not import all of it.

    __getattr__, __dir__ = lazy_exports(__name__, {"PlanExecutor": "executor", ...})

Type checkers and IDEs see the names through the package's ``if TYPE_CHECKING:`` imports.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # not `from typing import ...`: typing alone takes ~10 ms to import
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy_exports(
    package: str, where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``where`` maps each name to the
    submodule (relative to ``package``) that defines it. A name is imported once, then cached
    in the package's namespace."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
