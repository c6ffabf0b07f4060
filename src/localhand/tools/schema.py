"""From a typed function to a compact JSON schema, and from a validation error to a short hint.

Every key of a tool definition is paid for in tokens on every request, so pydantic's schema is
trimmed: no ``title`` keys, ``X | None`` shown as plain ``X`` (the parameter is optional
anyway), ``$ref`` inlined, no ``"default": null``.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns?|Yields?|Raises|Examples?|Notes?):\s*$")
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The summary (first paragraph) and the Google-style ``Args:`` descriptions of ``doc``.

    Only the first paragraph becomes the tool's description, so a docstring can go on with
    notes for people that the model never pays for.
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary.append(line.strip())
    args: dict[str, str] = {}
    in_args, indent, current = False, 0, ""
    for line in lines:
        stripped = line.strip()
        if _SECTION.match(stripped) and len(line) == len(line.lstrip()):
            in_args = stripped.split(":")[0] in ("Args", "Arguments", "Parameters")
            indent, current = 0, ""
            continue
        if not in_args or not stripped:
            continue
        this_indent = len(line) - len(line.lstrip())
        match = _ARG_LINE.match(stripped)
        if match and (not indent or this_indent <= indent):
            indent, current = this_indent, match.group(1).lstrip("*")
            args[current] = match.group(2).strip()
        elif current:  # a continuation line of the current argument
            args[current] = f"{args[current]} {stripped}".strip()
    return " ".join(summary), args


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic's object schema trimmed to what a model needs (see the module docstring)."""
    defs = schema.get("$defs", {})
    properties = {name: _compact(prop, defs) for name, prop in schema.get("properties", {}).items()}
    result: dict[str, Any] = {"type": "object", "properties": properties}
    result["required"] = list(schema.get("required", []))
    return result


_KEY_ORDER = ("type", "enum", "items", "description", "default")


def _compact(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    prop = dict(prop)
    if "$ref" in prop:
        target = defs.get(prop.pop("$ref").rsplit("/", 1)[-1], {})
        prop = {**target, **prop}
    options = prop.get("anyOf")
    if options is not None:
        not_null = [option for option in options if option.get("type") != "null"]
        if len(not_null) == 1:
            del prop["anyOf"]
            prop = {**_compact(not_null[0], defs), **prop}
        else:
            prop["anyOf"] = [_compact(option, defs) for option in not_null]
    if "items" in prop:
        prop["items"] = _compact(prop["items"], defs)
    prop.pop("title", None)
    if prop.get("default", ...) is None:
        del prop["default"]
    return ordered(prop)


def ordered(prop: dict[str, Any]) -> dict[str, Any]:
    """``prop`` with the keys of ``_KEY_ORDER`` first, in that order, then the rest as they were
    (an MCP server's schemas are put in the same order: ``mcp/schema``)."""
    first = [key for key in _KEY_ORDER if key in prop]
    return {key: prop[key] for key in [*first, *(key for key in prop if key not in _KEY_ORDER)]}


_PLAIN_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def plain_schema(
    parameters: list[inspect.Parameter], hints: dict[str, Any], docs: dict[str, str]
) -> dict[str, Any] | None:
    """The compact schema of ``parameters``, the same as ``compact_schema`` makes of pydantic's,
    when every type is plain (``str``, ``int``, ``float``, ``bool``, a list of one, a
    ``Literal`` of strings, any of those ``| None``) and every default a JSON scalar; else None.

    Why not always pydantic: building a model costs ~100 ms on the first tool (importing
    pydantic's schema machinery) before ``localhand run`` can send its first request. The
    model that validates the arguments is still pydantic's, built on the first call.
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in parameters:
        prop = _plain_type(hints.get(param.name))
        if prop is None or param.name.startswith("model_"):  # pydantic reserves model_*
            return None
        if param.name in docs:
            prop["description"] = docs[param.name]
        if param.default is param.empty:
            required.append(param.name)
        elif param.default is not None:
            if type(param.default) not in _PLAIN_TYPES:
                return None
            prop["default"] = param.default
        properties[param.name] = ordered(prop)
    return {"type": "object", "properties": properties, "required": required}


def _plain_type(annotation: Any) -> dict[str, Any] | None:
    annotation, _ = optional_of(annotation)
    if annotation in _PLAIN_TYPES:
        return {"type": _PLAIN_TYPES[annotation]}
    if (values := string_literal(annotation)) is not None:
        return {"type": "string", "enum": list(values)}
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is list and len(args) == 1:
        items = _plain_type(args[0])
        return {"type": "array", "items": ordered(items)} if items else None
    return None


def optional_of(annotation: Any) -> tuple[Any, bool]:
    """``X`` for ``X | None`` (and ``Optional[X]``), with whether ``None`` was allowed."""
    args = typing.get_args(annotation)
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    if union and len(args) == 2 and type(None) in args:
        (kind,) = (arg for arg in args if arg is not type(None))
        return kind, True
    return annotation, False


def string_literal(annotation: Any) -> tuple[str, ...] | None:
    """The values of a ``Literal`` of strings, else ``None``."""
    args = typing.get_args(annotation)
    literal = typing.get_origin(annotation) is typing.Literal
    return tuple(args) if literal and args and all(type(v) is str for v in args) else None


_ARTICLES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "object": "an object",
    "array": "a list",
}


def type_label(prop: dict[str, Any], *, article: bool = False) -> str:
    """A short name for a schema type: ``integer``, ``true or false``, ``'a' or 'b'``.

    With ``article``, reads as a sentence's object: ``an integer``, ``a list of string``.
    """
    if "enum" in prop:
        return " or ".join(repr(value) for value in prop["enum"])
    if "anyOf" in prop:
        return " or ".join(type_label(option, article=article) for option in prop["anyOf"])
    kind = prop.get("type")
    if kind == "boolean":
        return "true or false"
    if kind == "array" and prop.get("items"):
        head = "a list" if article else "list"
        return f"{head} of {type_label(prop['items'])}"
    if not kind:
        return "any value"
    return _ARTICLES.get(kind, str(kind)) if article else str(kind)


def usage(name: str, parameters: dict[str, Any]) -> str:
    """``read_file(path: string, start_line?: integer)``: the call's shape in one line."""
    required = set(parameters.get("required", []))
    parts = [
        f"{param}{'' if param in required else '?'}: {type_label(prop)}"
        for param, prop in parameters.get("properties", {}).items()
    ]
    return f"{name}({', '.join(parts)})"


def describe_errors(name: str, parameters: dict[str, Any], error: ValidationError) -> str:
    """One short message for all of ``error``'s problems, naming each parameter and its type.

    Small models repair a call far more often when the message names the parameter and the
    expected type, and shows the whole call's shape, than when it echoes pydantic's report.
    """
    properties = parameters.get("properties", {})
    problems = []
    for item in error.errors(include_url=False):
        param = ".".join(str(part) for part in item["loc"]) or "arguments"
        prop = properties.get(str(item["loc"][0]) if item["loc"] else "", {})
        if item["type"] == "missing":
            problems.append(f"missing required argument '{param}' ({type_label(prop)})")
        elif item["type"] == "extra_forbidden":
            problems.append(f"unknown argument '{param}'")
        else:
            got = repr(item.get("input"))
            got = got if len(got) <= 40 else got[:37] + "..."
            expected = type_label(prop, article=True)
            problems.append(f"argument '{param}' must be {expected}, got {got}")
    shape = usage(name, parameters)
    return f"Invalid arguments for {name}: {'; '.join(problems)}. Expected {shape}."
