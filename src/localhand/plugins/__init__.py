"""Plugins: tools and model profiles that installed packages add through entry points.

``entry_points`` finds them (cheaply, and never at start-up) and loads them, leaving out with a
warning any that fails; ``localhand.tools.plugins`` and ``localhand.profiles.plugins`` take
them in.
"""
