"""A file of data a person writes, in JSON or YAML: a task file, a plan file, a suite's task.

One reader for all of them, so that they read alike and say alike what is wrong: JSON when the
name ends in ``.json`` (in any case), else YAML; an error is a ``ConfigError`` that names the
file, never a traceback. ``described`` words what their validation found, field by field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError


def read_data(
    path: Path, what: str, read: Callable[[Path], str] = lambda p: p.read_text("utf-8")
) -> Any:
    """The data in ``path``, ``what`` it is (``task file``, ``plan file``) in the messages.
    ``read`` gives its text: the caller's way, e.g. only as the user trusted it
    (``localhand.safety.trust.store.use_named``)."""
    try:
        text = read(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc}") from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{what} {path} is not valid JSON: {exc}") from None
    import yaml  # only YAML files need it (~30 ms to import)

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {path} is not valid YAML: {exc}") from None


def described(error: ValidationError, sections: Mapping[str, type[BaseModel]]) -> str:
    """The problems pydantic found in a file's data, one line each (``  where: what``): an
    unknown field with the fields allowed where it stands (``sections``: the model of each
    top-level field that holds a table, ``""`` the model of the top level)."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "(top level)"
        message = problem["msg"]
        if problem["type"] == "extra_forbidden":
            section = sections.get(str(problem["loc"][0]), sections[""])
            message = f"unknown field; allowed here: {', '.join(section.model_fields)}"
        elif problem["type"] == "missing":
            message = "required field is missing"
        lines.append(f"  {where}: {message}")
    return "\n".join(lines)
