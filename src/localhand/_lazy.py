"""Names a package re-exports, loaded on first use (PEP 562), so that importing the package, or
one module of it, does not import all of it.

    __getattr__, __dir__, __all__ = lazy_exports(__name__, {"executor": "MODES PlanExecutor"})

Type checkers and IDEs see the names through the package's ``if TYPE_CHECKING:`` imports,
written ``from m import Name as Name``: that form re-exports a name for mypy's strict mode
without a literal ``__all__``, which is derived from the same table as the loader.
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
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package``: ``where`` maps each
    submodule (relative to ``package``) to the names it defines, separated by spaces. A name
    is imported once, then cached in the package's namespace."""
    owner = {name: module for module, names in where.items() for name in names.split()}

    def __getattr__(name: str) -> Any:
        module = owner.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *owner})

    return __getattr__, __dir__, sorted(owner)
