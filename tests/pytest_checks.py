"""The pytest command the tests of evidence give a run as its check, on the small projects
they make.

PYTEST_DONT_REWRITE: a helper module; it asserts nothing."""

from __future__ import annotations

import shlex
import sys

PLUGINS_OFF = (
    "-p no:randomly -p no:hypothesispytest -p no:xdist -p no:xdist.looponfail -p no:timeout"
    " -p no:anyio"
)
"""The plugins this virtual environment installs for localhand's own tests, blocked by name:
none is the checked project's, and loading them is over half of each check's start
(Hypothesis's imports all of Hypothesis; xdist, timeout and anyio ~0.3 s more). A plugin
named otherwise (a project's own conftest, ``PYTEST_PLUGINS``, as localhand's reporter is)
still loads, so the attacks on the check stay as they are."""

PYTEST = f"{shlex.quote(sys.executable)} -m pytest -q {PLUGINS_OFF}"
"""This interpreter's pytest, quiet, with ``PLUGINS_OFF``."""
