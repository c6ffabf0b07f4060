"""Arguments accepted without pydantic are exactly what pydantic would make of them; anything
that needs coercion or is wrong still goes through pydantic, with its messages."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localhand.errors import ToolError
from localhand.tools import Tool


def plain(path: str, count: int, ratio: float = 0.5, flag: bool = False,
          mode: Literal["a", "b"] = "a", note: str | None = None,
          limit: int | None = None) -> str:  # fmt: skip
    """A tool with every plain kind of parameter.

    Args:
        path: A path.
        count: How many.
        ratio: A share.
        flag: A switch.
        mode: One of two.
        note: Optional text.
        limit: Optional number.
    """
    return "ok"


TOOL = Tool.from_function(plain)
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([10**400, -(10**400), 2**1023, 2**63]),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.sampled_from(["a", "b", "12", "true", "1.5", " 3 "]),
    st.lists(st.integers(), max_size=2),
)
NAMES = st.sampled_from(["path", "count", "ratio", "flag", "mode", "note", "limit", "other"])


def through_pydantic(arguments: dict[str, Any]) -> Any:
    """What the pydantic path makes of ``arguments``: the values, or the error's message."""
    bare = Tool.from_function(plain)
    bare.__dict__["quick"] = None
    try:
        return bare.validate(arguments)
    except ToolError as error:
        return f"error: {error}"


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(NAMES, VALUES, max_size=8))
def test_the_quick_path_agrees_with_pydantic(arguments: dict[str, Any]) -> None:
    try:
        quick: Any = TOOL.validate(arguments)
    except ToolError as error:
        quick = f"error: {error}"
    expected = through_pydantic(arguments)
    assert quick == expected
    if not isinstance(quick, str):
        assert [type(v) for v in quick.values()] == [type(v) for v in expected.values()]


@pytest.mark.parametrize(
    ("arguments", "quick"),
    [
        ({"path": "a", "count": 2}, True),
        ({"path": "a", "count": 2, "ratio": 1, "note": None}, True),
        ({"path": "a", "count": "2"}, False),  # "2" for an int: pydantic coerces it
        ({"path": "a", "count": True}, False),
        ({"path": "a"}, False),  # missing: pydantic says so
        ({"path": "a", "count": 2, "cwd": "/"}, False),  # unknown: pydantic refuses it by name
        ({"path": "a", "count": 2, "mode": "c"}, False),
    ],
)
def test_which_calls_take_the_quick_path(arguments: dict[str, Any], quick: bool) -> None:
    assert TOOL.quick is not None
    assert (TOOL.quick.accept(arguments) is not None) is quick


def test_a_tool_that_needs_pydantic_to_describe_it_has_no_quick_path() -> None:
    def nested(items: dict[str, int]) -> str:
        """Takes a mapping."""
        return "ok"

    assert Tool.from_function(nested).quick is None


def test_a_plain_first_call_does_not_import_pydantic() -> None:
    code = (
        "import sys, tempfile\n"
        "from localhand.tools import default_tools\n"
        "from localhand.types import ToolCall\n"
        "ws = tempfile.mkdtemp()\n"
        "open(ws + '/a.txt', 'w').write('hi')\n"
        "registry = default_tools(ws)\n"
        "result = registry.execute(ToolCall('read_file', {'path': 'a.txt'}))\n"
        "assert result.ok, result.content\n"
        "print('pydantic' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done.stderr
