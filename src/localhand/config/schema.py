"""A JSON schema the user gives for the final answer (``--output-schema FILE``, a task file's
``output_schema``): read and checked before the run starts, so a mistake is a ``ConfigError``
that names the file, not a failed run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from localhand.errors import ConfigError


def load_schema(path: Path) -> dict[str, Any]:
    """The JSON schema in ``path``; a ``ConfigError`` says what is wrong with it."""
    try:
        schema = json.loads(path.expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the output schema {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"the output schema {path} is not JSON: {exc}") from None
    return checked_schema(schema, f"the output schema {path}")


def checked_schema(schema: Any, name: str = "the output schema") -> dict[str, Any]:
    """``schema`` when it is a valid JSON schema (an object); else a ``ConfigError`` that
    says, of ``name``, what is wrong with it."""
    from jsonschema import SchemaError, validators  # jsonschema loads only when used

    if not isinstance(schema, dict):
        raise ConfigError(f"{name} must be a JSON object (a JSON schema)")
    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise ConfigError(f"{name} is not a valid JSON schema: {exc.message}") from None
    return schema
