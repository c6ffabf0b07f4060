"""Agent Skills (``SKILL.md``, agentskills.io): instructions for a kind of task, loaded only
when the model needs them.

The first request lists each skill by name and description, within a budget of its own
(``shelf.LIST_TOKENS``); the model loads a body with ``read_skill``, whose result is appended
to the history like any tool's, so the server's cached prefix stays. ``found`` finds them and
holds a workspace's to the user's trust; ``shelf`` lists them, reads them and keeps a loaded
skill's ``allowed-tools`` as a restriction. docs/skills.md is the user's page.
"""

from localhand.skills.found import Skill
from localhand.skills.shelf import Skills, find_skills

__all__ = ["Skill", "Skills", "find_skills"]
