"""Plugins: what installed packages add to localhand through entry points.

Two groups, each read the first time it is needed and never at start-up:

- ``localhand.tools``: a typed function or a ``Tool``, offered to the model beside the
  built-in tools (``localhand.tools.default_tools``);
- ``localhand.profiles``: a ``Profile``, or a list of them, for a model family
  (``localhand.profiles.installed_profiles``).

A package declares them in its ``pyproject.toml``::

    [project.entry-points."localhand.tools"]
    jira_search = "localhand_jira:search"

Finding them is cheap on purpose: ``importlib.metadata.entry_points`` parses every installed
package's entry points (about 50 ms per group in a 90-package environment, more than the whole
parse of ``localhand run``), so the ``.dist-info`` folders on ``sys.path`` are scanned for a
``[localhand.`` section first, and only the packages that have one are read through
``importlib.metadata``. A package in a zip file on ``sys.path`` is not scanned.

The current directory is never searched: ``python -m localhand`` puts it on ``sys.path``,
and a workspace (a cloned repository, or a model's writes) could plant a ``.dist-info`` folder
there whose code would run in localhand's own process, outside the sandbox. For the same
reason a run's workspace is distrusted as a whole (``distrust_under``, called by the one door
before any tool or profile is looked up): a model can write into a virtualenv that lives in
its workspace (``.venv/lib/.../site-packages``), and a plugin found there is left out with a
warning, never loaded, even when localhand itself runs from that virtualenv.

A plugin that fails to load (an import error, an object of the wrong kind) is left out with
a warning naming the package and what to do; the run goes on without it.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

TOOLS = "localhand.tools"
PROFILES = "localhand.profiles"
GROUPS = (TOOLS, PROFILES)

_MARK = b"[localhand."


@dataclass(frozen=True)
class Plugin:
    """One entry point of a group, with the package that declares it."""

    name: str
    package: str
    entry_point: EntryPoint
    folder: str
    """The ``.dist-info`` folder that declares it (resolved)."""

    def load(self) -> Any:
        """The object the entry point names (importing its module)."""
        return self.entry_point.load()

    def warn(self, problem: str) -> None:
        """Say that this plugin is left out, and what to do about it."""
        import logging  # only when a plugin is left out: not on the way to the first request

        logging.getLogger("localhand").warning(
            "localhand: left out the %s plugin %r of the package %r: %s. Fix or upgrade the "
            "package, or uninstall it (pip uninstall %s).",
            self.entry_point.group,
            self.name,
            self.package,
            problem,
            self.package,
        )


_distrusted: set[str] = set()


def distrust_under(root: str | os.PathLike[str]) -> None:
    """Never load a plugin declared under ``root`` (a run's workspace: the model writes there)
    in this process."""
    _distrusted.add(os.path.realpath(root))


def _inside_distrusted(folder: str) -> bool:
    return any(folder == root or folder.startswith(root + os.sep) for root in _distrusted)


def plugins(group: str) -> list[Plugin]:
    """The entry points of ``group`` that installed packages declare, in ``sys.path`` order
    (a package found twice counts once, where it is found first, as Python imports it); those
    declared inside a distrusted workspace are left out, each with a warning."""
    if group not in GROUPS:
        raise ValueError(f"unknown plugin group {group!r}; known: {', '.join(GROUPS)}")
    kept = []
    for plugin in _declared().get(group, []):
        if _inside_distrusted(plugin.folder):
            plugin.warn(
                f"it is installed inside the run's workspace ({plugin.folder}), where the model "
                "can write; install it outside the workspace to use it"
            )
            continue
        kept.append(plugin)
    return kept


def loaded(group: str, accept: Callable[[Any], str | None]) -> Iterator[tuple[Plugin, Any]]:
    """Each plugin of ``group`` loaded, with its object; ``accept`` says what is wrong with an
    object (None: nothing). A plugin that does not load, or that ``accept`` refuses, is left
    out with a warning."""
    for plugin in plugins(group):
        try:
            value = plugin.load()
        except Exception as error:  # a third party's import: anything may go wrong there
            plugin.warn(
                f"{plugin.entry_point.value} did not load ({type(error).__name__}: {error})"
            )
            continue
        problem = accept(value)
        if problem is not None:
            plugin.warn(f"{plugin.entry_point.value} is {problem}")
            continue
        yield plugin, value


@functools.cache
def _declared() -> dict[str, list[Plugin]]:
    folders = list(_dist_folders())
    if not folders:  # the common case: importlib.metadata is not even imported
        return {}
    from importlib.metadata import PathDistribution  # loaded only when used
    from pathlib import Path  # loaded only when used

    found: dict[str, list[Plugin]] = {}
    for folder in folders:
        dist = PathDistribution(Path(folder))
        package = dist.metadata["Name"] or _dist_name(os.path.basename(folder))
        for entry_point in dist.entry_points:
            if entry_point.group in GROUPS:
                plugin = Plugin(entry_point.name, package, entry_point, folder)
                found.setdefault(entry_point.group, []).append(plugin)
    return found


def _dist_folders() -> Iterator[str]:
    """The ``.dist-info`` and ``.egg-info`` folders on ``sys.path`` whose entry points name a
    ``localhand.`` group, in ``sys.path`` order, each package once; the current directory is
    left out."""
    here = os.path.realpath(os.getcwd())
    seen: set[str] = set()
    for entry in sys.path:
        where = os.path.realpath(entry or os.curdir)
        if where == here or not os.path.isdir(where):
            continue
        try:
            names = sorted(os.listdir(where))
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            package = _dist_name(name)
            if package in seen:  # shadowed by the same package earlier on sys.path
                continue
            seen.add(package)
            folder = os.path.join(where, name)
            try:
                with open(os.path.join(folder, "entry_points.txt"), "rb") as file:
                    declares = _MARK in file.read()
            except OSError:
                continue
            if declares:  # resolved only then: a few hundred realpaths were half of the scan
                yield os.path.realpath(folder)


def _dist_name(folder: str) -> str:
    """``Foo_Bar-1.0.dist-info`` -> ``foo-bar``: a package's name as pip compares them."""
    return folder.rsplit(".", 1)[0].split("-", 1)[0].lower().replace("_", "-").replace(".", "-")
