"""Plugins: tools and model profiles that installed packages add through entry points.

``entry_points`` finds them (cheaply, and never at start-up) and loads them, leaving out with a
warning any that fails; ``localhand.tools.plugins`` and ``localhand.profiles.plugins`` take
them in.
"""

from __future__ import annotations

from localhand.plugins.entry_points import GROUPS, PROFILES, TOOLS, Plugin, loaded, plugins

__all__ = ["GROUPS", "PROFILES", "TOOLS", "Plugin", "loaded", "plugins"]
