"""Tools from typed functions: the schema the model sees, and how every bad call is answered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest

from localhand.errors import ToolError
from localhand.tools import Tool, ToolRegistry, Workspace, default_tools
from localhand.tools.schema import parse_docstring
from localhand.types import ToolCall, ToolResult


def find_issues(
    query: str,
    limit: int | None = None,
    state: Literal["open", "closed"] = "open",
    include_body: bool = False,
) -> str:
    """Find issues matching a query.

    Longer notes for people, which the model never sees.

    Args:
        query: Words to search for.
        limit: Most issues to return; continues
            on a second line.
        state (str): Which issues to search.
        include_body: Whether to show each issue's text.

    Returns:
        The matches, one per line.
    """
    return json.dumps([query, limit, state, include_body])


def test_schema_from_signature_and_docstring() -> None:
    assert Tool.from_function(find_issues).definition() == {
        "type": "function",
        "function": {
            "name": "find_issues",
            "description": "Find issues matching a query.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words to search for."},
                    "limit": {
                        "type": "integer",
                        "description": "Most issues to return; continues on a second line.",
                    },
                    "state": {
                        "type": "string",
                        "enum": ["open", "closed"],
                        "description": "Which issues to search.",
                        "default": "open",
                    },
                    "include_body": {
                        "type": "boolean",
                        "description": "Whether to show each issue's text.",
                        "default": False,
                    },
                },
                "required": ["query"],
            },
        },
    }


def test_name_and_description_can_be_overridden() -> None:
    tool = Tool.from_function(find_issues, name="issues", description="Search issues.")
    assert (tool.name, tool.description) == ("issues", "Search issues.")


def test_function_without_docstring_or_hints() -> None:
    def bare(x, y=2):  # type: ignore[no-untyped-def]
        return x

    tool = Tool.from_function(bare)
    assert tool.description == ""
    assert tool.parameters == {"type": "object", "properties": {"x": {}, "y": {"default": 2}},
                               "required": ["x"]}  # fmt: skip


def test_parse_docstring_summary_is_the_first_paragraph() -> None:
    summary, args = parse_docstring(
        """Do a thing
        across two lines.

        More text.

        Arguments:
            a: First.
            b (int, optional): Second.
        """
    )
    assert summary == "Do a thing across two lines."
    assert args == {"a": "First.", "b": "Second."}


@pytest.mark.parametrize(
    "signature",
    [
        "def f(*args: int) -> str: ...",
        "def f(**kw: int) -> str: ...",
        "def f(a: int, /) -> str: ...",
    ],
)
def test_signatures_a_model_cannot_call_are_refused(signature: str) -> None:
    namespace: dict[str, Any] = {}
    exec(signature, namespace)
    with pytest.raises(TypeError):
        Tool.from_function(namespace["f"])


def test_async_functions_are_refused() -> None:
    async def f() -> str:
        return ""

    with pytest.raises(TypeError, match="async"):
        Tool.from_function(f)


def test_no_title_keys_anywhere_in_the_default_definitions(tmp_path: Path) -> None:
    def walk(node: Any) -> None:
        if isinstance(node, dict):
            assert "title" not in node or isinstance(node["title"], dict)
            assert "anyOf" not in node
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(default_tools(tmp_path).definitions())


def test_default_tool_set_is_compact(tmp_path: Path) -> None:
    registry = default_tools(tmp_path)
    assert registry.names == [
        "read_file",
        "write_file",
        "edit_file",
        "list_directory",
        "search_files",
        "run_command",
        "wait",
    ]
    # The system prompt and the schemas together should fit in about 1,300 tokens (chars / 4);
    # background commands (run_command's background, wait) cost about 135 of them.
    assert len(json.dumps(registry.definitions())) / 4 < 730


def test_default_tools_accepts_extra_functions(tmp_path: Path) -> None:
    registry = default_tools(Workspace(tmp_path), find_issues)
    assert registry.names[-1] == "find_issues"
    assert "find_issues" in registry


@pytest.fixture
def registry() -> ToolRegistry:
    def fail(kind: str) -> str:
        """Fail on purpose."""
        if kind == "tool":
            raise ToolError("file 'x' not found")
        raise ValueError("boom")

    def data() -> dict[str, int]:
        """Return data."""
        return {"a": 1}

    def nothing() -> None:
        """Return nothing."""

    def result() -> ToolResult:
        """Return a result."""
        return ToolResult("exit 1", ok=False)

    return ToolRegistry([find_issues, fail, data, nothing, result])


def run(registry: ToolRegistry, name: str, **arguments: Any) -> ToolResult:
    return registry.execute(ToolCall(name, arguments))


def test_valid_call_runs(registry: ToolRegistry) -> None:
    result = run(registry, "find_issues", query="bug")
    assert result == ToolResult('["bug", null, "open", false]')


def test_strings_are_coerced_in_lax_mode(registry: ToolRegistry) -> None:
    result = run(registry, "find_issues", query="bug", limit="5", include_body="true")
    assert json.loads(result.content) == ["bug", 5, "open", True]


def test_numbers_are_accepted_for_strings(registry: ToolRegistry) -> None:
    assert json.loads(run(registry, "find_issues", query=42).content)[0] == "42"


def test_null_for_an_optional_argument_means_not_given(registry: ToolRegistry) -> None:
    result = run(registry, "find_issues", query="bug", state=None, include_body=None)
    assert json.loads(result.content) == ["bug", None, "open", False]


def test_unknown_tool_lists_the_available_ones(registry: ToolRegistry) -> None:
    result = run(registry, "find_issue", query="x")
    assert not result.ok
    assert result.content == (
        "Unknown tool 'find_issue'. Available tools: find_issues, fail, data, nothing, result. "
        "Did you mean 'find_issues'?"
    )


def test_unknown_tool_in_an_empty_registry() -> None:
    result = ToolRegistry([]).execute(ToolCall("read_file"))
    assert not result.ok
    assert "no tools are available" in result.content


def test_missing_argument_names_it_and_its_type(registry: ToolRegistry) -> None:
    result = run(registry, "find_issues")
    assert not result.ok
    assert result.content == (
        "Invalid arguments for find_issues: missing required argument 'query' (string). "
        "Expected find_issues(query: string, limit?: integer, state?: 'open' or 'closed', "
        "include_body?: true or false)."
    )


def test_bad_type_names_the_parameter_and_the_expected_type(registry: ToolRegistry) -> None:
    result = run(registry, "find_issues", query="x", limit="many")
    assert "argument 'limit' must be an integer, got 'many'" in result.content
    result = run(registry, "find_issues", query="x", include_body="maybe")
    assert "argument 'include_body' must be true or false, got 'maybe'" in result.content
    result = run(registry, "find_issues", query="x", state="all")
    assert "argument 'state' must be 'open' or 'closed', got 'all'" in result.content


def test_unknown_argument_is_refused_naming_the_allowed_ones(registry: ToolRegistry) -> None:
    result = run(registry, "find_issues", query="x", repo="me/it")
    assert not result.ok
    assert "unknown argument 'repo'" in result.content
    assert "Expected find_issues(query: string, limit?: integer" in result.content


def test_arguments_that_are_not_an_object(registry: ToolRegistry) -> None:
    result = registry.execute(ToolCall("find_issues", ["x"]))  # type: ignore[arg-type]
    assert result == ToolResult("Arguments for find_issues must be a JSON object, got list", False)


def test_long_bad_input_is_shortened(registry: ToolRegistry) -> None:
    result = run(registry, "find_issues", query="x", limit="9" * 100 + "x")
    assert "got '99999" in result.content
    assert "9" * 60 not in result.content


def test_tool_error_becomes_its_message(registry: ToolRegistry) -> None:
    assert run(registry, "fail", kind="tool") == ToolResult("file 'x' not found", ok=False)


def test_other_exceptions_become_type_and_message(registry: ToolRegistry) -> None:
    assert run(registry, "fail", kind="crash") == ToolResult("ValueError: boom", ok=False)


def test_return_values_are_turned_into_text(registry: ToolRegistry) -> None:
    assert run(registry, "data") == ToolResult('{"a": 1}')
    assert run(registry, "nothing") == ToolResult("(no output)")
    assert run(registry, "result") == ToolResult("exit 1", ok=False)


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ValueError, match="find_issues"):
        ToolRegistry([find_issues, find_issues])


def test_registry_accepts_tools_and_functions() -> None:
    registry = ToolRegistry([Tool.from_function(find_issues, name="a"), find_issues])
    assert registry.names == ["a", "find_issues"]
    assert len(registry) == 2
    assert [tool.name for tool in registry] == ["a", "find_issues"]
    assert registry.get("a") is not None
    assert registry.get("b") is None


def test_close_closes_each_owner_once() -> None:
    class Owner:
        closed = 0

        def one(self) -> str:
            """One."""
            return "1"

        def two(self) -> str:
            """Two."""
            return "2"

        def close(self) -> None:
            self.closed += 1

    owner = Owner()
    with ToolRegistry([owner.one, owner.two, find_issues]):
        pass
    assert owner.closed == 1


def _pydantic_schema(function: Any) -> dict[str, Any]:
    from localhand.tools.registry import _arguments_model
    from localhand.tools.schema import compact_schema

    return compact_schema(_arguments_model("f", function).model_json_schema())


def _plain(function: Any) -> dict[str, Any] | None:
    import inspect
    import typing

    from localhand.tools.schema import plain_schema

    params = list(inspect.signature(function).parameters.values())
    _, docs = parse_docstring(inspect.getdoc(function))
    return plain_schema(params, typing.get_type_hints(function), docs)


def _signatures() -> list[Any]:
    def scalars(s: str, i: int, f: float, b: bool, s2: str = "x", i2: int = 3) -> str:
        """Scalars.

        Args:
            s: A string.
            f: A number.
        """
        return ""

    def optional(a: int | None = None, b: str | None = "x", c: bool = True) -> str:
        return ""

    def lists(a: list[str], b: list[int] | None = None, c: list[Literal["x", "y"]] | None = None):
        return ""

    def literal(mode: Literal["a", "b"] = "a", f: float = 2) -> str:
        return ""

    return [scalars, optional, lists, literal, find_issues]


@pytest.mark.parametrize("function", _signatures(), ids=lambda f: f.__name__)
def test_plain_schemas_are_the_ones_pydantic_gives(function: Any) -> None:
    assert _plain(function) == _pydantic_schema(function)


def test_the_default_tools_need_no_pydantic_for_their_schemas(tmp_path: Path) -> None:
    for tool in default_tools(tmp_path):
        assert _plain(tool.function) == _pydantic_schema(tool.function) == tool.parameters


def test_types_only_pydantic_can_describe_still_get_a_schema() -> None:
    def place(point: dict[str, int], tags: list[str] | None = None) -> str:
        return json.dumps(point)

    assert _plain(place) is None
    tool = Tool.from_function(place)
    assert "arguments_model" in tool.__dict__  # the model its schema came from, kept
    assert tool.parameters["properties"]["point"]["type"] == "object"
    assert tool({"point": {"x": "1", "y": 2}}).content == '{"x": 1, "y": 2}'


def test_building_the_default_tools_does_not_import_pydantic(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; from localhand.tools import default_tools; "
        f"default_tools(Path({str(tmp_path)!r})); print('pydantic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
