"""Fix argument types against a tool's JSON schema.

Small models often quote everything: ``"true"``, ``"42"``, ``"[\\"a\\"]"``. The schema says what
was meant, so each value is converted only towards a type the schema allows, and only when the
conversion is exact. Anything else is left as it is so that validation reports it clearly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from localhand.nesting import MAX_DEPTH, cut_deep
from localhand.parsing.json_load import loads_lenient

_MAX_DEPTH = 32
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}
# In the order a value is tried against them: a bool is not an integer, an integer not a number.
_NON_STRING = ("boolean", "integer", "number", "null", "object", "array")


def _types_of(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    # Untyped schemas still say a lot: infer from the keywords present.
    if "properties" in schema or "additionalProperties" in schema:
        return ["object"]
    if "items" in schema or "prefixItems" in schema:
        return ["array"]
    for key in ("enum", "const"):
        values = schema.get(key)
        values = values if key == "enum" else [values]
        if isinstance(values, list) and values:
            kinds = {_kind(v) for v in values}
            if len(kinds) == 1:
                return [kinds.pop()]
    return []


def _kind(value: Any) -> str:
    return next((kind for kind in _NON_STRING if _matches(value, kind)), "string")


def _matches(value: Any, kind: str) -> bool:
    if isinstance(value, bool) and kind in ("integer", "number"):
        return False  # bool is an int in Python, never in JSON
    if kind == "integer" and isinstance(value, float):
        return False
    return isinstance(value, _JSON_TYPES.get(kind, ()))


def _numeric_text(text: str) -> bool:
    # Plain decimal notation only: no "nan", "inf", "0x10" or "1_000", which Python accepts.
    body = text[1:] if text.startswith(("+", "-")) else text
    if not body or body[0] not in "0123456789.":
        return False
    return all(ch in "0123456789.eE+-" for ch in body)


def _from_string(text: str, kind: str) -> tuple[bool, Any]:
    stripped = text.strip()
    if kind == "boolean":
        lowered = stripped.lower()
        if lowered in ("true", "false"):
            return True, lowered == "true"
    elif kind in ("integer", "number") and _numeric_text(stripped):
        try:
            number = float(stripped)
        except ValueError:
            return False, None
        if not math.isfinite(number):
            return False, None
        integral_text = not any(ch in stripped for ch in ".eE")
        if kind == "integer":
            if integral_text:
                return True, int(stripped)
            if number.is_integer():
                return True, int(number)
            return False, None
        return True, int(stripped) if integral_text else number
    elif kind == "null":
        if stripped.lower() in ("null", "none"):
            return True, None
    elif kind in ("object", "array") and stripped.startswith(("{", "[")):
        ok, value = loads_lenient(stripped, may_close=0)  # a value must be whole
        if ok and _matches(value, kind):
            return True, value
    return False, None


def _coerce(value: Any, schema: Any, depth: int) -> Any:
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return value
    branches = [
        b for key in ("anyOf", "oneOf") for b in schema.get(key) or () if isinstance(b, Mapping)
    ]
    if branches:
        # Already valid for some branch: only recurse into it. Otherwise take the first branch
        # that converts the value.
        for branch in branches:
            if any(_matches(value, kind) for kind in _types_of(branch)):
                return _coerce(value, branch, depth + 1)
        for branch in branches:
            converted = _coerce(value, branch, depth + 1)
            if converted is not value:
                return converted
        return value
    kinds = _types_of(schema)
    if not kinds:
        return value
    for kind in kinds:
        if _matches(value, kind):
            return _descend(value, kind, schema, depth)
    if isinstance(value, str):
        # Non-string kinds first, in a fixed order, so "true" prefers boolean over a number.
        for kind in _NON_STRING:
            if kind in kinds:
                ok, converted = _from_string(value, kind)
                if ok:
                    return _descend(converted, kind, schema, depth)
        return value
    if isinstance(value, float) and "integer" in kinds and value.is_integer():
        return int(value)  # 5.0 for an integer parameter (is_integer is False for inf/nan)
    if isinstance(value, int | float) and not isinstance(value, bool) and "string" in kinds:
        return str(value)  # {"line": 12} for a string parameter: unambiguous
    return value


def _descend(value: Any, kind: str, schema: Mapping[str, Any], depth: int) -> Any:
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra = schema.get("additionalProperties")
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, Mapping) else None)
            out[key] = _coerce(item, sub, depth + 1)
        return out
    if kind == "array" and isinstance(value, list):
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        result = []
        for position, item in enumerate(value):
            tuple_item = isinstance(prefix, list) and position < len(prefix)
            sub = prefix[position] if tuple_item and isinstance(prefix, list) else items
            result.append(_coerce(item, sub, depth + 1))
        return result
    return value


def coerce_arguments(arguments: Any, parameters_schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return ``arguments`` with values converted to the types ``parameters_schema`` declares.

    ``"true"``/``"false"`` become booleans, numeric strings integers or numbers, JSON strings
    objects or arrays, ``"null"`` None where the schema allows null, a whole number written as
    ``5.0`` an integer, a number given for a string parameter its text. A value that cannot be
    converted exactly is left as it is. ``arguments`` given as a JSON string is decoded first;
    anything that is not an object gives ``{}``. Never raises.

    Arguments nested deeper than ``nesting.MAX_DEPTH`` are not converted but cut, in place:
    each container below the limit becomes a ``nesting.Cut`` (the registry then refuses the
    call, saying how deep it was). In place, because the reply's history message holds these
    same containers, and the history is estimated, copied and sent again on every turn: a
    500-deep list there would end the run with a ``RecursionError``.
    """
    try:
        if isinstance(arguments, str):
            ok, decoded = loads_lenient(arguments, may_close=1)
            arguments = decoded if ok else None
        if not isinstance(arguments, Mapping):
            return {}
        if isinstance(arguments, dict) and cut_deep(arguments) > MAX_DEPTH:
            return dict(arguments)
        schema: Mapping[str, Any] = (
            parameters_schema if isinstance(parameters_schema, Mapping) else {}
        )
        if not schema:
            return dict(arguments)
        if "type" not in schema and "properties" not in schema:
            schema = {**schema, "type": "object"}
        result = _coerce(dict(arguments), schema, 0)
        return result if isinstance(result, dict) else dict(arguments)
    except Exception:  # a hostile schema must not break a call
        return dict(arguments) if isinstance(arguments, Mapping) else {}
