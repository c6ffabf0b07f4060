"""``localhand skills``: the skills a run in a workspace would offer, and why any is left out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from localhand.cli.args import Command, fail

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def skills(args: Namespace) -> int:
    """List the skills a run in this workspace would offer, and why any is left out."""
    from localhand.safety.approval.approver import escape  # not needed to parse the options
    from localhand.skills import find_skills  # not needed to parse the options

    if not args.workspace.is_dir():
        fail(f"{args.workspace} is not a directory; name the workspace with --workspace DIR")
    found = find_skills(args.workspace, lambda _: None)
    for skill in found.found.values():
        limits = skill.allowed_tools
        allows = "" if limits is None else f"; allows only: {', '.join(limits) or 'none'}"
        print(
            escape(f"{skill.name}: {skill.description}"),
            escape(f"  {skill.path}{allows}"),
            sep="\n",
        )
    for said in found.left_out:
        print(escape(f"left out: {said}"))
    if not found.found and not found.left_out:
        print("no skills: add one as .agents/skills/NAME/SKILL.md (docs/skills.md)")
    return 0


def skills_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "-w", "--workspace", type=Path, default=Path("."), metavar="DIR", help="Default: here."
    )


COMMANDS = {"skills": Command(skills, skills_arguments)}
