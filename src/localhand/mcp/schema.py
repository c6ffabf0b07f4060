"""An MCP tool's input schema in the flat shape built-in tools have, and its argument model.

Servers send any JSON Schema: ``$ref`` into ``$defs`` (pydantic's output), ``anyOf`` with
``null``, titles, ``$schema``, constraints, nesting many levels deep; a hostile one sends a
schema that refers to itself, ten thousand properties or megabytes of description. The model
gets what built-in tools give it: ``tools.schema.compact_schema``'s shape, cut to what
Ollama's client keeps of a property (``type``, ``enum``, ``items``, ``description``; plus
``default``, as built-in tools have). A nested object's fields are named in its description,
since that shape has no room for them. Every walk here is bounded (depth, count, length), so
no schema can make it recurse without end or grow without bound.

The arguments the model sends are checked against the same flat schema, with pydantic in lax
mode as for built-in tools (``"5"`` for an integer is 5), before anything goes to the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Union

from localhand.tools.schema import compact_schema, ordered, type_label

if TYPE_CHECKING:
    from pydantic import BaseModel

MAX_PROPERTIES = 48
MAX_DESCRIPTION = 1024
"""Characters of a tool's description (paid for in every request)."""
MAX_PROPERTY_DESCRIPTION = 300
MAX_ENUM = 64
MAX_LEVELS = 4
"""Levels of properties, items and anyOf kept below the arguments object."""
_SCALARS = (str, int, float, bool)
_TYPES = frozenset(("string", "integer", "number", "boolean", "array", "object", "null"))


def flat_schema(raw: Any) -> dict[str, Any]:
    """``raw`` (an MCP ``inputSchema``) as ``{"type": "object", "properties", "required"}``."""
    raw = raw if isinstance(raw, dict) else {}
    defs = raw.get("$defs", raw.get("definitions"))
    tree = _bounded(raw, defs if isinstance(defs, dict) else {}, 0, [2000])
    compact = compact_schema(tree)
    properties = {
        name: _flat(prop, 0) for name, prop in list(compact["properties"].items())[:MAX_PROPERTIES]
    }
    required = [name for name in compact["required"] if name in properties]
    return {"type": "object", "properties": properties, "required": required}


def description(raw: Any) -> str:
    """A tool's description, cut to ``MAX_DESCRIPTION`` characters."""
    return _text(raw, MAX_DESCRIPTION)


def _bounded(node: Any, defs: dict[str, Any], level: int, budget: list[int]) -> dict[str, Any]:
    """``node`` with ``$ref`` inlined and only the keys ``compact_schema`` reads, at most
    ``MAX_LEVELS`` deep and ``budget[0]`` nodes in all (a self-reference ends there)."""
    budget[0] -= 1
    if not isinstance(node, dict) or budget[0] < 0:
        return {}
    ref = node.get("$ref")
    if isinstance(ref, str) and level <= MAX_LEVELS:
        target = defs.get(ref.rsplit("/", 1)[-1])
        node = {**(target if isinstance(target, dict) else {}), **node}
    out: dict[str, Any] = {}
    kind = node.get("type")
    if isinstance(kind, str) and kind in _TYPES:
        out["type"] = kind
    elif isinstance(kind, list):
        out["type"] = [k for k in kind if isinstance(k, str) and k in _TYPES][:7]
    if isinstance(node.get("enum"), list):
        out["enum"] = [v for v in node["enum"] if v is None or isinstance(v, _SCALARS)][:MAX_ENUM]
    if "description" in node:
        out["description"] = _text(node["description"], MAX_PROPERTY_DESCRIPTION)
    default = node.get("default")
    if (default is None or isinstance(default, _SCALARS)) and "default" in node:
        out["default"] = default
    if level >= MAX_LEVELS:
        return out
    properties = node.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {
            str(name)[:64]: _bounded(prop, defs, level + 1, budget)
            for name, prop in list(properties.items())[:MAX_PROPERTIES]
        }
        required = node.get("required")
        if isinstance(required, list):
            out["required"] = [r for r in required if isinstance(r, str)][:MAX_PROPERTIES]
    if isinstance(node.get("items"), dict):
        out["items"] = _bounded(node["items"], defs, level + 1, budget)
    options = node.get("anyOf", node.get("oneOf"))
    if isinstance(options, list):
        out["anyOf"] = [_bounded(o, defs, level + 1, budget) for o in options[:8]]
    return out


def _flat(prop: dict[str, Any], level: int) -> dict[str, Any]:
    """One property in the shape Ollama's client keeps (see the module docstring)."""
    out: dict[str, Any] = {}
    kind = prop.get("type")
    if "anyOf" in prop:
        kinds = [option.get("type") for option in prop["anyOf"]]
        if kinds and all(isinstance(k, str) for k in kinds):
            kind = list(dict.fromkeys(kinds))
    if isinstance(kind, list):
        kind = [k for k in kind if k != "null"]
        kind = kind[0] if len(kind) == 1 else (kind or None)
    if kind:
        out["type"] = kind
    for key in ("enum", "description", "default"):
        if key in prop:
            out[key] = prop[key]
    items = prop.get("items")
    if isinstance(items, dict) and items and level < 2:
        out["items"] = _flat(items, level + 1)
        if items.get("properties"):  # a list of objects: their fields, one level down
            out["items"]["properties"] = {
                name: _flat(p, level + 2) for name, p in items["properties"].items()
            }
            out["items"]["required"] = list(items.get("required", []))
    fields = prop.get("properties")
    if kind == "object" and fields:
        keys = ", ".join(
            f"{name}{'' if name in prop.get('required', []) else '?'}: {type_label(_flat(p, 2))}"
            for name, p in fields.items()
        )
        said = f"an object {{{keys}}}"
        out["description"] = f"{out['description']} ({said})" if out.get("description") else said
    return ordered(out)


def _text(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else ""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def arguments_model(
    name: str, parameters: dict[str, Any]
) -> tuple[type[BaseModel], dict[str, str]]:
    """A pydantic model that checks arguments against ``parameters`` (a flat schema), and
    its field names mapped to the arguments' names.

    Fields are named ``arg0``, ``arg1``... with the property's name as alias: MCP names such
    as ``from``, ``a-b`` or ``model_id`` are not all valid (or allowed) pydantic field names.
    """
    from pydantic import ConfigDict, Field, create_model  # pydantic loads only when used

    required = set(parameters.get("required", []))
    fields: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    for index, (prop_name, prop) in enumerate(parameters.get("properties", {}).items()):
        field = f"arg{index}"
        aliases[field] = prop_name
        annotation = _python_type(prop)
        if prop_name in required:
            fields[field] = (annotation, Field(..., alias=prop_name))
        else:
            fields[field] = (annotation | None, Field(None, alias=prop_name))
    config = ConfigDict(extra="forbid", coerce_numbers_to_str=True, populate_by_name=False)
    model = create_model(f"{name}_arguments", __config__=config, **fields)
    return model, aliases


_PYTHON = {"string": str, "integer": int, "number": float, "boolean": bool}


def _python_type(prop: dict[str, Any], level: int = 0) -> Any:
    enum = prop.get("enum")
    if enum and all(isinstance(v, str | int) and not isinstance(v, bool) for v in enum):
        return Literal[tuple(enum)]
    kind = prop.get("type")
    if isinstance(kind, list):
        options = tuple(_python_type({"type": k}, level) for k in kind)
        return Union[options] if options else Any  # noqa: UP007  (a tuple of types)
    if kind in _PYTHON:
        return _PYTHON[kind]
    if kind == "array":
        items = prop.get("items")
        inner = _python_type(items, level + 1) if isinstance(items, dict) and level < 2 else Any
        return list[inner]  # type: ignore[valid-type]
    if kind == "object":
        return dict[str, Any]
    return Any


__all__ = ["arguments_model", "description", "flat_schema"]
