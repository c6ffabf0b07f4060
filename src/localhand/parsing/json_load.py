"""Load JSON-like values leniently: strict ``json`` first (tolerating raw control characters,
which models put in code strings), then Python literals (``{'a': True}``), closing what a
stopped reply left open, and last ``json-repair``.

Every lenient result is accepted only when ``faithful.check`` proves it is what the text says:
punctuation may change, content may not (no character invented, dropped or moved into a value,
no missing value filled in, no cut string, number or word completed). The ``Repair`` it returns
names the containers that were closed because the text stopped inside them: a caller decides
which of those it can accept (the call and its arguments object, yes; an argument's own value,
no: it may be missing items)."""

from __future__ import annotations

import ast
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from localhand.nesting import decode_too_deep
from localhand.parsing.faithful import NOTHING_CLOSED, Repair, check
from localhand.parsing.json_scan import Span, close_unclosed

_DECODER = json.JSONDecoder(strict=False)
# Lenient loaders are slow (json-repair reads ~400 KB/s): bigger spans get only the strict
# parser.
MAX_LENIENT_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class Loaded:
    """A value loaded from ``text[start:end]``; ``how`` says which loader succeeded and
    ``repair`` what a lenient one had to close."""

    value: Any
    end: int
    how: str  # "json" | "python" | "repaired"
    repair: Repair = field(default=NOTHING_CLOSED)


class _PythonNames(ast.NodeTransformer):
    """Accept JSON's ``true``/``false``/``null`` inside an otherwise Python literal."""

    _MAP: ClassVar[dict[str, Any]] = {"true": True, "false": False, "null": None}

    def visit_Name(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Name) and node.id in self._MAP:
            return ast.copy_location(ast.Constant(self._MAP[node.id]), node)
        return node


def python_literal(text: str) -> tuple[bool, Any]:
    """``(ok, value)`` for a Python literal such as ``{'a': True, 'b': None}``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "invalid escape sequence" in C:\dir is not ours
            tree = ast.parse(text.strip(), mode="eval")
        tree = _PythonNames().visit(tree)
        return True, ast.literal_eval(tree)
    except Exception:  # SyntaxError, ValueError, RecursionError, MemoryError: not a literal
        return False, None


def load_strict(text: str, span: Span) -> Loaded | None:
    """Strict JSON at ``span.start`` (raw control characters allowed).

    Parses a slice, never the whole text: ``JSONDecodeError`` counts the newlines before the
    error position, so failing at offset N of a long text costs O(N) and thousands of failures
    would be quadratic."""
    chunk = text[span.start : span.end]
    try:
        value, end = _DECODER.raw_decode(chunk)
        return Loaded(value, span.start + end, "json")
    except RecursionError:
        found = decode_too_deep(chunk)
        return None if found is None else Loaded(found[0], span.start + found[1], "json")
    except Exception:  # JSONDecodeError
        return None


RepairGate = bool | Callable[[int], bool]
"""Whether json-repair may run: a flag, or a budget asked with the chunk's length."""


def _gate(allow_repair: RepairGate, chars: int) -> bool:
    return allow_repair(chars) if callable(allow_repair) else allow_repair


def _json_repair(chunk: str) -> Any:
    from json_repair import repair_json  # ~45 ms to import; only broken JSON needs it

    try:
        return repair_json(chunk, return_objects=True)
    except Exception:  # json-repair is best effort; any failure means "not repairable"
        return None


def _lenient(
    chunk: str, allow_repair: RepairGate, balanced: bool | None = None
) -> tuple[Any, str, Repair] | None:
    """The faithful lenient reading of ``chunk``: (value, how, repair). ``balanced`` says
    whether the scan saw its brackets close (None: unknown), to skip loaders that cannot
    succeed (a literal needs them closed, closing needs them open)."""
    ok, value = python_literal(chunk) if balanced is not False else (False, None)
    if ok:
        repair = check(chunk, value)
        if repair is not None:
            return value, "python", repair
    closed = close_unclosed(chunk) if balanced is not True else None
    if closed is not None:
        try:
            value = json.loads(closed, strict=False)
        except (ValueError, RecursionError):
            pass
        else:
            repair = check(chunk, value)
            if repair is not None:
                return value, "repaired", repair
    if chunk.lstrip()[:1] not in ("{", "[") or not _gate(allow_repair, len(chunk)):
        return None
    value = _json_repair(chunk)
    if not isinstance(value, dict | list) or not value:
        return None
    repair = check(chunk, value)
    return (value, "repaired", repair) if repair is not None else None


def load_lenient(text: str, span: Span, *, allow_repair: RepairGate = True) -> Loaded | None:
    """A faithful lenient load of ``text[span.start:span.end]`` (see the module docstring):
    a Python literal, the text with what it left open closed, or, if allowed, ``json-repair``."""
    chunk = text[span.start : span.end]
    if len(chunk) > MAX_LENIENT_CHARS:
        return None
    found = _lenient(chunk, allow_repair, span.closed)
    if found is None or not isinstance(found[0], dict | list):
        return None
    value, how, repair = found
    return Loaded(value, span.end, how, repair)


def load_at(text: str, span: Span) -> Loaded | None:
    """Load the value starting at ``span.start``, strict first, then leniently."""
    return load_strict(text, span) or load_lenient(text, span)


def read_lenient(text: str, *, allow_repair: RepairGate = True) -> Loaded | None:
    """A whole string as a value: strict JSON, or a faithful lenient reading whose ``repair``
    says what it closed (``end`` is the text's length)."""
    stripped = text.strip()
    if not stripped:
        return None
    strict = load_strict(stripped, Span(0, len(stripped), True))
    if strict is not None and strict.end == len(stripped):
        return Loaded(strict.value, len(text), "json")
    if len(stripped) > MAX_LENIENT_CHARS:
        return None
    found = _lenient(stripped, allow_repair)
    if found is None:
        return None
    value, how, repair = found
    return Loaded(value, len(text), how, repair)


def loads_lenient(
    text: str, *, allow_repair: RepairGate = True, may_close: int | None = None
) -> tuple[bool, Any]:
    """``(ok, value)`` for a whole string: strict JSON, or a faithful lenient reading.

    ``may_close`` limits which containers a stopped text may have closed for it: only those
    shallower than that depth (1: the outermost only, as for an arguments object whose values
    must be complete; 0: none, for a value that must be whole). ``None`` allows any depth."""
    loaded = read_lenient(text, allow_repair=allow_repair)
    if loaded is None:
        return False, None
    if may_close is not None and loaded.repair.deepest >= may_close:
        return False, None
    return True, loaded.value
