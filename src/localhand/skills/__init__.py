"""Agent Skills (``SKILL.md``, agentskills.io): instructions for a kind of task, listed by name
in the first request and loaded only when the model calls ``read_skill`` (docs/skills.md).
``found`` finds them and holds a workspace's to the user's trust; ``shelf`` lists them, reads
them and keeps a loaded skill's ``allowed-tools`` as a restriction."""

from localhand.skills.found import Skill
from localhand.skills.shelf import Skills, find_skills

__all__ = ["Skill", "Skills", "find_skills"]
