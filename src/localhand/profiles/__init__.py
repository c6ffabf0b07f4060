"""What each model family needs, as data: thinking and its switch per backend, where reasoning
goes back into the history, sampling, the text call format, native tools, call ids, a think
budget (issue 19).

``profile_for(model)`` gives the built-in profile for a model name; ``read_profiles(toml)``
reads a user's changes from ``localhand.toml`` and its ``resolve(model)`` gives the profile
with them. ``localhand.profiles.request`` spells a profile per backend,
``localhand.profiles.history`` shapes the conversation for the family's template.
``installed_profiles()`` adds the families installed packages declare (entry points).
"""

from __future__ import annotations

from localhand.profiles.history import assistant_turn, call_id, wire_history
from localhand.profiles.match import normalise, profile_for
from localhand.profiles.model import GENERIC, Profile, Sampling
from localhand.profiles.overrides import ProfileSettings, read_profiles
from localhand.profiles.plugins import installed_profiles
from localhand.profiles.request import ThinkingSwitch, sampling_options, thinking_switch
from localhand.profiles.table import PROFILES

__all__ = [
    "GENERIC",
    "PROFILES",
    "Profile",
    "ProfileSettings",
    "Sampling",
    "ThinkingSwitch",
    "assistant_turn",
    "call_id",
    "installed_profiles",
    "normalise",
    "profile_for",
    "read_profiles",
    "sampling_options",
    "thinking_switch",
    "wire_history",
]
