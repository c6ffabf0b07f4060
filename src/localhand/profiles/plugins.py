"""Profiles from installed packages: the ``localhand.profiles`` entry points
(``localhand.plugins``), each a ``Profile`` or a list of them.

They are tried before the built-in families, so a package can teach localhand a family the
table does not know, or a finer one inside a known family (``qwen3-coder-next`` before
``qwen3``). A profile whose name is taken (a built-in family's, ``generic``, or another
package's) is left out with a warning: ``[profiles.NAME]`` in ``localhand.toml`` changes a
built-in family instead.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from localhand.plugins.entry_points import PROFILES as GROUP
from localhand.plugins.entry_points import loaded
from localhand.profiles.model import GENERIC, Profile
from localhand.profiles.table import PROFILES


@functools.cache
def installed_profiles() -> tuple[Profile, ...]:
    """The installed packages' profiles, then the built-in ones: the order names are matched
    in. Read once per process, when a model's profile is first looked up."""
    names = {GENERIC.name, *(p.name for p in PROFILES)}
    added: list[Profile] = []
    for plugin, value in loaded(GROUP, _kind):
        for profile in [value] if isinstance(value, Profile) else value:
            if profile.name in names:
                plugin.warn(f"a profile named {profile.name!r} exists already")
                continue
            if not profile.patterns:
                plugin.warn(f"the profile {profile.name!r} has no patterns to match names by")
                continue
            names.add(profile.name)
            added.append(profile)
    return (*added, *PROFILES)


def _kind(value: Any) -> str | None:
    if isinstance(value, Profile):
        return None
    is_list = isinstance(value, Sequence) and not isinstance(value, str)
    if is_list and all(isinstance(item, Profile) for item in value):
        return None
    return f"a {type(value).__name__}, not a localhand Profile or a list of them"
