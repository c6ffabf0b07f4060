"""The public API is what ``localhand.__all__`` says, and every name in it exists."""

from __future__ import annotations

import localhand


def test_all_names_exist_and_are_sorted() -> None:
    for name in localhand.__all__:
        assert hasattr(localhand, name), name
    assert localhand.__all__ == sorted(localhand.__all__)


def test_public_names_match_all() -> None:
    # dir(), not vars(): the names load on first use (PEP 562), and dir() lists them all.
    public = {name for name in dir(localhand) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(localhand, name)).__name__ == "module"}
    assert public - modules == set(localhand.__all__) - {"__version__"}


def test_parse_tool_calls_contract() -> None:
    parsed = localhand.parse_tool_calls(
        {
            "content": "",
            "tool_calls": [{"function": {"name": "read_file", "arguments": '{"path": "a"}'}}],
        },
        [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                },
            }
        ],
    )
    assert parsed.type == "tool_calls"
    assert [(c.name, c.arguments) for c in parsed.calls] == [("read_file", {"path": "a"})]
    answer = localhand.parse_tool_calls({"content": "<think>hmm</think>All done."})
    assert (answer.type, answer.content, answer.calls) == ("final_answer", "All done.", ())
    assert localhand.parse_tool_calls({"content": "  "}).type == "empty"
