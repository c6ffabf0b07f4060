"""Tools are typed Python functions; the registry offers their schemas and runs the model's calls.

A tool is any function with type hints and a Google-style docstring::

    def add(a: int, b: int = 1) -> str:
        \"\"\"Add two numbers.

        Args:
            a: The first number.
            b: The second number.
        \"\"\"
        return str(a + b)

Its name is the function's name, its description the docstring's first paragraph, its
parameters the signature (a parameter with a default is optional). The model's arguments are
validated by a pydantic model built from the same signature, in lax mode, so ``"12"`` becomes
``12`` and ``"true"`` becomes ``True``.

Unknown arguments are refused, naming the allowed ones, rather than silently dropped: a model
that sends ``cwd`` to run_command or ``mode="append"`` to write_file believes it asked for
something, and running the call without it could do damage it did not intend. ``null`` for an
optional argument is taken as "not given", which small models often mean by it.
"""

from __future__ import annotations

import difflib
import inspect
import json
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from localhand.errors import ToolError
from localhand.nesting import MAX_DEPTH, depth
from localhand.safety.secrets.scrub import scrub_text
from localhand.tools.quick_args import QuickArguments
from localhand.tools.schema import (
    compact_schema,
    describe_errors,
    parse_docstring,
    plain_schema,
)
from localhand.types import Closing, ToolCall, ToolResult

if TYPE_CHECKING:  # pydantic loads with the first tool built, not with the package
    from pydantic import BaseModel, ConfigDict

_ARGUMENT_CONFIG: ConfigDict = {"extra": "forbid", "coerce_numbers_to_str": True}


@dataclass(frozen=True)
class Tool:
    """One callable tool: its schema for the model and the function that runs it."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments: ``{"type": "object", "properties": ..., "required": ...}``."""
    function: Callable[..., Any] = field(repr=False)
    """Called with validated keyword arguments; returns a ``str``, a ``ToolResult`` or JSON-able
    data, and raises ``ToolError`` to tell the model what went wrong."""

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> Tool:
        """Build a tool from a typed function (or bound method); see the module docstring.

        Raises ``TypeError`` for signatures a model cannot call: ``*args``, ``**kwargs``,
        positional-only parameters, coroutine functions, or no name.
        """
        if inspect.iscoroutinefunction(function):
            raise TypeError(f"{function!r}: async tools are not supported")
        tool_name = name or getattr(function, "__name__", None)
        if not tool_name:
            raise TypeError(f"{function!r} has no __name__; pass name=")
        summary, arg_docs = parse_docstring(inspect.getdoc(function))
        hints = typing.get_type_hints(function)
        params = list(inspect.signature(function).parameters.values())
        for param in params:
            if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
                raise TypeError(f"{tool_name}: parameter {param.name!r} cannot be passed by name")
        parameters = plain_schema(params, hints, arg_docs)
        model = None
        if parameters is None:  # a type only pydantic can describe: build its model now
            model = _arguments_model(tool_name, function)
            parameters = compact_schema(model.model_json_schema())
        tool = cls(
            name=tool_name,
            description=description if description is not None else summary,
            parameters=parameters,
            function=function,
        )
        if model is not None:  # built already: the first call need not build it again
            tool.__dict__["arguments_model"] = model
        else:
            tool.__dict__["quick"] = QuickArguments.of(params, hints)
        return tool

    @cached_property
    def quick(self) -> QuickArguments | None:
        """Takes arguments of the right types without pydantic (see ``quick_args``)."""
        return None

    @cached_property
    def arguments_model(self) -> type[BaseModel]:
        """The pydantic model that validates the arguments, built on the first call."""
        return _arguments_model(self.name, self.function)

    def definition(self) -> dict[str, Any]:
        """The tool in Ollama/OpenAI function format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments coerced to the signature's types, or a ``ToolError`` naming the problem."""
        if not isinstance(arguments, Mapping):
            raise ToolError(
                f"Arguments for {self.name} must be a JSON object, got {type(arguments).__name__}"
            )
        # Before anything that recurses (pydantic, the error's repr): 500 levels would raise
        # RecursionError there. Measured without recursion, in about a microsecond.
        levels = depth(arguments)
        if levels > MAX_DEPTH:
            raise ToolError(
                f"Arguments for {self.name} are nested {levels} levels deep; the limit is "
                f"{MAX_DEPTH}. Pass each parameter as the plain value its type asks for"
            )
        optional = set(self.parameters["properties"]) - set(self.parameters["required"])
        given = {k: v for k, v in arguments.items() if not (v is None and k in optional)}
        if self.quick is not None and (accepted := self.quick.accept(given)) is not None:
            return accepted
        from pydantic import ValidationError  # pydantic loads only when used

        try:
            parsed = self.arguments_model.model_validate(given)
        except ValidationError as error:
            raise ToolError(describe_errors(self.name, self.parameters, error)) from None
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}

    def __call__(self, arguments: Mapping[str, Any]) -> ToolResult:
        """Validate and run; raises what the function raises (``ToolRegistry.execute`` does not)."""
        return _as_result(self.function(**self.validate(arguments)))


def _arguments_model(name: str, function: Callable[..., Any]) -> type[BaseModel]:
    """A pydantic model of ``function``'s parameters (their docs as field descriptions)."""
    from pydantic import Field, create_model  # pydantic loads only when used

    _, arg_docs = parse_docstring(inspect.getdoc(function))
    hints = typing.get_type_hints(function)
    fields: dict[str, Any] = {}
    for param in inspect.signature(function).parameters.values():
        default = ... if param.default is param.empty else param.default
        annotation = hints.get(param.name, Any)
        fields[param.name] = (annotation, Field(default, description=arg_docs.get(param.name)))
    return create_model(f"{name}_arguments", __config__=_ARGUMENT_CONFIG, **fields)


def _as_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(value)
    if value is None:
        return ToolResult("(no output)")
    try:
        return ToolResult(json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return ToolResult(str(value))


MAX_CALLS_PER_REPLY = 8
"""Tool calls from one reply that the loop runs; a model emitting dozens is stuck in a loop."""


def cap_calls(
    calls: Sequence[ToolCall], cap: int = MAX_CALLS_PER_REPLY
) -> tuple[list[ToolCall], list[tuple[ToolCall, ToolResult]]]:
    """The first ``cap`` calls to run, and for each of the rest the result that tells the model
    why it did not run (so every call still gets an answer, as chat templates expect)."""
    total = len(calls)
    refused = [
        (
            call,
            ToolResult(
                f"Not run: a reply may make at most {cap} tool calls, and this was call "
                f"{number} of {total}. Wait for the results of the first calls, then make the "
                "rest in your next reply.",
                ok=False,
            ),
        )
        for number, call in enumerate(calls[cap:], cap + 1)
    ]
    return list(calls[:cap]), refused


class ToolRegistry(Closing):
    """The tools offered to the model, by name. ``execute`` never raises for a bad call."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            tool = item if isinstance(item, Tool) else Tool.from_function(item)
            if tool.name in self._tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self._tools[tool.name] = tool

    def __repr__(self) -> str:
        return f"ToolRegistry({self.names!r})"

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def names(self) -> list[str]:
        """Tool names in the order they were given."""
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def definitions(self) -> list[dict[str, Any]]:
        """Every tool in Ollama/OpenAI function format, for the request's ``tools``."""
        return [tool.definition() for tool in self._tools.values()]

    def execute(self, call: ToolCall) -> ToolResult:
        """Run ``call`` and return what the model should read.

        Never raises an ``Exception``: an unknown tool, bad arguments, a ``ToolError`` or a
        crash all come back as ``ok=False`` results the model can act on. The text has its
        secrets redacted (``safety.scrub``): it goes to the model, the store and the dashboard.
        """
        tool = self._tools.get(call.name)
        if tool is None:
            return ToolResult(self._unknown(call.name), ok=False)
        try:
            result = tool(call.arguments)
        except ToolError as error:
            result = ToolResult(str(error), ok=False)
        except Exception as error:  # a crashing tool is reported to the model, not fatal
            result = ToolResult(f"{type(error).__name__}: {error}", ok=False)
        content = scrub_text(result.content)
        return result if content is result.content else replace(result, content=content)

    def _unknown(self, name: str) -> str:
        if not self._tools:
            return f"Unknown tool '{name}': no tools are available; reply with your answer."
        message = f"Unknown tool '{name}'. Available tools: {', '.join(self._tools)}."
        close = difflib.get_close_matches(str(name), list(self._tools), n=1, cutoff=0.6)
        return f"{message} Did you mean '{close[0]}'?" if close else message

    def close(self) -> None:
        """Release what the tools hold, such as processes run_command left in the background.

        Calls ``close()`` once on each object whose bound methods are tools.
        """
        seen: set[int] = set()
        for tool in self._tools.values():
            owner = getattr(tool.function, "__self__", None)
            close = getattr(owner, "close", None)
            if callable(close) and id(owner) not in seen:
                seen.add(id(owner))
                close()


class WrappedRegistry(ToolRegistry):
    """``inner``'s tools (the same ``Tool`` objects: the change tracker knows them) with what a
    subclass's ``execute`` does around each call; closing it closes ``inner``."""

    def __init__(self, inner: ToolRegistry) -> None:
        super().__init__(list(inner))
        self.inner = inner

    def close(self) -> None:
        self.inner.close()
