"""``localhand run``'s ``--continue RUN "more instructions"`` and ``--output-schema FILE``:
the flags and their checks (the work is ``localhand.session.continuing`` and
``localhand.session.structured``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.errors import ConfigError

if TYPE_CHECKING:
    from argparse import ArgumentParser

    from localhand.run.task import Task
    from localhand.session.continuing import Continuation


def add_continue_option(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--continue",
        dest="continue_run",
        metavar="RUN",
        help="Carry on a recorded run ('last', a run id or its prefix) with TASK as the new "
        "instructions: its conversation, workspace, model and settings, unless given.",
    )


def continued_task(
    ref: str, given: Task, workspace: Path | None, task_file: Path | None
) -> tuple[Task, Continuation]:
    """The task of ``--continue REF``, given the other flags; a ``ConfigError`` says what to
    do with those that cannot go with it."""
    from localhand.session.continuing import continued_from_store  # not needed to parse the options

    if workspace is not None:
        raise ConfigError(
            "--continue runs in the earlier run's workspace: drop --workspace "
            "(or start a new run there without --continue)"
        )
    if task_file is not None:
        raise ConfigError(
            "--continue takes its task from the earlier run: drop --task-file and say what "
            'to do next, localhand run --continue RUN "INSTRUCTIONS"'
        )
    return continued_from_store(ref, given)


def add_output_schema_option(parser: ArgumentParser, text: str | None = None) -> None:
    parser.add_argument(
        "--output-schema",
        type=Path,
        metavar="FILE",
        help=text
        or "A JSON schema the final answer must follow: once the run has an answer, it is "
        "asked for as JSON (constrained where the backend can) and validated, into the "
        "Result's answer_json.",
    )


def schema_in(path: Path | None) -> dict[str, Any] | None:
    """The JSON schema of ``--output-schema FILE``, checked before the run starts."""
    if path is None:
        return None
    from localhand.config.schema import load_schema  # not needed to parse the options

    return load_schema(path)
