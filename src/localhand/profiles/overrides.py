"""A user's changes to the profiles, from ``localhand.toml``.

```toml
[profiles.qwen3]              # change a built-in family
think = false
think_budget = 1024
sampling = {temperature = 0.5}

[profiles.my-finetune]        # a family of your own: needs patterns
patterns = ["my-ft"]
text_format = "hermes"

[profile]                     # the model of this run, whatever its family
use = "qwen3"                 # take this profile instead of the one its name matches
think_budget = 4096
```

``read_profiles`` takes the parsed file (the dict ``tomllib`` returns) and checks every key
and value, raising ``ConfigError`` with the key's name and what is allowed there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args, get_origin, get_type_hints

from localhand.errors import ConfigError
from localhand.profiles.match import first_match, normalise
from localhand.profiles.model import GENERIC, SAMPLING_FIELDS, Profile, Sampling
from localhand.profiles.plugins import installed_profiles

# What each field takes, read from the profile's own annotations: one of a Literal's choices,
# true or false, or a string; the others are checked one by one in ``_value``.
_TYPES = {name: kind for name, kind in get_type_hints(Profile).items() if name != "name"}
_CHOICES = {name: get_args(kind) for name, kind in _TYPES.items() if get_origin(kind) is Literal}
_PLAIN = {name: kind for name, kind in _TYPES.items() if kind in (bool, str)}
_SAID = {bool: "true or false", str: "a string"}
_FIELDS = tuple(_TYPES)


@dataclass(frozen=True, slots=True)
class ProfileSettings:
    """The profiles after a user's changes, and how the run's model picks one."""

    profiles: tuple[Profile, ...] = field(default_factory=installed_profiles)
    """The user's own families first, then the installed ones (the packages' own, then the
    built-in ones) with the user's changes."""
    use: str | None = None
    """``[profile] use``: the profile every model gets, whatever its name."""
    current: Mapping[str, Any] = field(default_factory=dict)
    """``[profile]``'s other keys: changes to whichever profile the model gets."""

    def resolve(self, model: str) -> Profile:
        """The profile for ``model``, with every change the file makes to it."""
        if self.use is not None:
            profile = next(p for p in (*self.profiles, GENERIC) if p.name == self.use)
        else:
            profile = first_match(normalise(model), self.profiles)
        return apply(profile, self.current) if self.current else profile


def apply(profile: Profile, values: Mapping[str, Any]) -> Profile:
    """``profile`` with ``values`` (as ``_fields`` checked them): a sampling table changes
    only the options it names."""
    changes = dict(values)
    for key in ("sampling", "sampling_no_think"):
        if key in changes:
            base = getattr(profile, key) or Sampling()
            changes[key] = replace(base, **changes[key])
    return replace(profile, **changes)


def read_profiles(data: Mapping[str, Any], source: str = "localhand.toml") -> ProfileSettings:
    """The ``[profiles.NAME]`` tables and the ``[profile]`` table of a parsed ``localhand.toml``
    (top level or under ``[localhand]``); the built-in profiles when it has neither."""
    nested = data.get("localhand")
    if isinstance(nested, Mapping) and ("profiles" in nested or "profile" in nested):
        data = nested
    tables = data.get("profiles", {})
    if not isinstance(tables, Mapping):
        raise ConfigError(f"{source}: [profiles] must be a table of [profiles.NAME] tables")
    installed = installed_profiles()
    builtin = {p.name: p for p in installed}
    own: list[Profile] = []
    changed = dict(builtin)
    for name, table in tables.items():
        where = f"{source}: [profiles.{name}]"
        values = _fields(table, where)
        if name in builtin:
            changed[name] = apply(builtin[name], values)
        elif name == GENERIC.name:
            raise ConfigError(f"{where}: change the generic profile through [profile] instead")
        elif not values.get("patterns"):
            raise ConfigError(
                f"{where}: a profile of your own needs patterns (the built-in ones are "
                f"{', '.join(builtin)})"
            )
        else:
            own.append(apply(replace(GENERIC, name=str(name), family=str(name)), values))
    profiles = (*own, *(changed[p.name] for p in installed))
    current = data.get("profile", {})
    if not isinstance(current, Mapping):
        raise ConfigError(f"{source}: [profile] must be a table")
    current = dict(current)
    use = current.pop("use", None)
    names = [p.name for p in profiles] + [GENERIC.name]
    if use is not None and use not in names:
        raise ConfigError(
            f"{source}: [profile] use = {use!r}: no such profile; known: {', '.join(names)}"
        )
    values = _fields(current, f"{source}: [profile]")
    if "patterns" in values:
        raise ConfigError(f"{source}: [profile]: patterns belong in a [profiles.NAME] table")
    return ProfileSettings(profiles=profiles, use=use, current=values)


def _fields(table: Any, where: str) -> dict[str, Any]:
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} must be a table")
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in _FIELDS:
            raise ConfigError(f"{where}: {key}: unknown field; allowed here: {', '.join(_FIELDS)}")
        values[key] = _value(key, value, f"{where}: {key}")
    return values


def _value(key: str, value: Any, where: str) -> Any:
    if key in _CHOICES:
        if value not in _CHOICES[key]:
            raise ConfigError(f"{where} = {value!r}; allowed: {', '.join(_CHOICES[key])}")
        return value
    if key in _PLAIN:
        if not isinstance(value, _PLAIN[key]):
            raise ConfigError(f"{where} must be {_SAID[_PLAIN[key]]}")
        return value
    if key == "think_budget":
        # 0 or false: no budget (the model may think up to the reply ceiling).
        if value is False or value == 0:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{where} must be a whole number of tokens (0 for no budget)")
        return value
    if key == "patterns":
        return _patterns(value, where)
    if key in ("sampling", "sampling_no_think"):
        return _sampling(value, where)
    raise ConfigError(f"{where}: cannot be set here")  # pragma: no cover - _FIELDS is exhaustive


def _patterns(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where} must be a list of regular expressions")
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"{where}: {pattern!r} is not a regular expression: {exc}") from None
    return tuple(value)


def _sampling(value: Any, where: str) -> dict[str, float | int]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table of {', '.join(SAMPLING_FIELDS)}")
    for name, number in value.items():
        if name not in SAMPLING_FIELDS:
            raise ConfigError(f"{where}.{name}: unknown; allowed: {', '.join(SAMPLING_FIELDS)}")
        if isinstance(number, bool) or not isinstance(number, int | float) or number < 0:
            raise ConfigError(f"{where}.{name} must be a number of at least 0")
        if name == "top_k" and number != int(number):
            raise ConfigError(f"{where}.top_k must be a whole number")
    return {k: int(v) if k == "top_k" else float(v) for k, v in value.items()}
