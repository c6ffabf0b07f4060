"""The tiny view of the embedded backend (``localhand.models._tiny``): what a model under a
billion parameters may call, decided from the conversation, and the grammar that holds it to
that. No model runs here; the grammar tests use llama.cpp's grammar engine with only the tiny
model's vocabulary loaded (a fraction of a second), so they need the embedded extra."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import optional_deps
from localhand.models._grammar_json import json_gbnf, literal
from localhand.models._json_calls import plain_messages
from localhand.models._tiny import (
    TINY_PROMPT,
    Knowledge,
    is_tiny,
    tiny_schema,
    tiny_tools,
    tiny_turn,
)
from localhand.run.prompt import build_messages
from localhand.tools import default_tools
from localhand.types import Message

CALC = 'def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n\nprint("ok")\n'


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "lib").mkdir(parents=True)
    (root / "calc.py").write_text(CALC)
    (root / "check.py").write_text("import calc\n")
    (root / "lib" / "util.py").write_text("X = 1\n")
    return root


def opening(workspace: Path, task: str) -> list[Message]:
    return build_messages(task, workspace)


def call(name: str, **args: Any) -> list[Message]:
    """An assistant turn with one call, as the loop stores it."""
    return [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": name, "arguments": args}}],
        }
    ]


def result(name: str, content: str) -> list[Message]:
    return [{"role": "tool", "content": content, "tool_name": name}]


def ran(workspace: Path, name: str, **args: Any) -> list[Message]:
    """A call and the result the real tool gives."""
    from localhand.types import ToolCall

    done = default_tools(workspace).execute(ToolCall(name, args))
    return call(name, **args) + result(name, done.content)


def branches(schema: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The schema's branches by tool name (``final_answer`` for the answer): the arguments'
    properties of each (edit_file has one per line it may edit)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for branch in schema.get("anyOf", [schema]):
        props = branch["properties"]
        name = props["name"]["enum"][0] if "name" in props else "final_answer"
        args = props.get("arguments", {})
        for each in args.get("anyOf", [args]):
            out.setdefault(name, []).append(each.get("properties", {}))
    return out


def edits(schema: dict[str, Any]) -> list[tuple[str, str]]:
    """The (path, old_text) pairs an edit may name."""
    found = []
    for args in branches(schema).get("edit_file", []):
        (path,), (old,) = args["path"]["enum"], args["old_text"]["enum"]
        assert args["new_text"] == {"type": "string", "not": {"enum": [old]}}  # a real change
        found.append((path, old))
    return found


NAMES = ["read_file", "edit_file", "write_file", "run_command", "list_directory"]


# -- what may be called --------------------------------------------------------------------------
def test_only_files_known_to_exist_may_be_read(workspace: Path) -> None:
    known = Knowledge.of(opening(workspace, "Fix the bug in calc.py"))
    assert set(known.texts) == {"calc.py", "check.py"}  # from the task's "Top-level files"
    allowed = branches(tiny_schema(known, NAMES))
    assert allowed["read_file"] == [{"path": {"type": "string", "enum": ["calc.py", "check.py"]}}]
    assert allowed["list_directory"][0]["path"]["enum"] == ["lib"]
    assert "final_answer" not in allowed  # nothing looked at yet: no answer
    assert "edit_file" not in allowed  # nothing read: nothing to edit


def test_a_file_read_is_not_read_again_and_its_unique_lines_may_be_edited(
    workspace: Path,
) -> None:
    messages = opening(workspace, "Fix the bug in calc.py") + ran(
        workspace, "read_file", path="calc.py"
    )
    allowed = branches(tiny_schema(Knowledge.of(messages), NAMES))
    assert allowed["read_file"][0]["path"]["enum"] == ["check.py"]
    # "return a - b" occurs twice: an edit of it could not apply, so it is no choice.
    assert edits(tiny_schema(Knowledge.of(messages), NAMES)) == [
        ("calc.py", "def add(a, b):"),
        ("calc.py", "def sub(a, b):"),
        ("calc.py", 'print("ok")'),
    ]
    assert "final_answer" in allowed


def test_listing_a_directory_makes_its_files_readable(workspace: Path) -> None:
    messages = opening(workspace, "Tidy up") + ran(workspace, "list_directory", path="lib")
    allowed = branches(tiny_schema(Knowledge.of(messages), NAMES))
    assert "lib/util.py" in allowed["read_file"][0]["path"]["enum"]
    assert "list_directory" not in allowed  # every known directory is listed


def test_an_edit_updates_the_lines_and_its_own_lines_are_not_edited_again(
    workspace: Path,
) -> None:
    messages = opening(workspace, "Fix calc.py") + ran(workspace, "read_file", path="calc.py")
    messages += ran(
        workspace,
        "edit_file",
        path="calc.py",
        old_text="def sub(a, b):",
        new_text="def minus(a, b):\n    return a - b  # minus",
    )
    lines = [old for _, old in edits(tiny_schema(Knowledge.of(messages), NAMES))]
    assert "def sub(a, b):" not in lines  # gone from the file
    assert "def minus(a, b):" not in lines  # the model's own: no edit of an edit
    assert "def add(a, b):" in lines  # the lines it has not touched still may be


def test_new_files_are_those_the_task_names(workspace: Path) -> None:
    task = "Create notes.md listing the functions, then run `python3 check.py`"
    known = Knowledge.of(opening(workspace, task))
    assert known.quoted == ["python3 check.py"]
    (write,) = branches(tiny_schema(known, NAMES))["write_file"]
    assert write["path"] == {"type": "string", "enum": ["notes.md"]}
    done = opening(workspace, task) + ran(
        workspace, "write_file", path="notes.md", content="add, sub"
    )
    assert "write_file" not in branches(tiny_schema(Knowledge.of(done), NAMES))


def test_a_task_naming_no_new_file_may_create_any_new_one(workspace: Path) -> None:
    (write,) = branches(tiny_schema(Knowledge.of(opening(workspace, "Add a test")), NAMES))[
        "write_file"
    ]
    assert set(write["path"]["not"]["enum"]) == {"calc.py", "check.py"}


def test_after_a_change_the_tasks_check_runs_and_its_pass_ends_the_task(workspace: Path) -> None:
    task = "Create out.txt containing 1, then run `python3 check.py`"
    messages = opening(workspace, task) + ran(workspace, "write_file", path="out.txt", content="1")
    assert tiny_schema(Knowledge.of(messages), NAMES) == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "enum": ["run_command"]},
            "arguments": {
                "type": "object",
                "properties": {"command": {"type": "string", "enum": ["python3 check.py"]}},
                "required": ["command"],
                "additionalProperties": False,
            },
        },
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }
    messages += call("run_command", command="python3 check.py")
    messages += result("run_command", "(no output)\n[Exit code 0.]")
    assert branches(tiny_schema(Knowledge.of(messages), NAMES)) == {"final_answer": [{}]}


def test_commands_are_the_tasks_and_the_scripts_runs_not_one_just_run(workspace: Path) -> None:
    messages = opening(workspace, "Check it with `make test`")
    (run,) = branches(tiny_schema(Knowledge.of(messages), NAMES))["run_command"]
    assert run["command"]["enum"] == ["make test", "python3 calc.py", "python3 check.py"]
    messages += call("run_command", command="python3 calc.py") + result("run_command", "ok")
    (run,) = branches(tiny_schema(Knowledge.of(messages), NAMES))["run_command"]
    assert "python3 calc.py" not in run["command"]["enum"]  # same files, same output


def test_a_named_file_in_a_directory_not_listed_is_not_created(workspace: Path) -> None:
    task = "Count the lines of lib/util.py and write the number to out/n.txt"
    (write,) = branches(tiny_schema(Knowledge.of(opening(workspace, task)), NAMES))["write_file"]
    assert write["path"]["enum"] == ["out/n.txt"]  # lib/ is there, unlisted: util.py may be too


def test_version_numbers_and_abbreviations_are_not_files(workspace: Path) -> None:
    known = Knowledge.of(opening(workspace, "Add requests>=2.31 to req.txt, e.g. after numpy"))
    assert known.targets == ["req.txt"]


def test_the_tiny_turn_has_a_short_prompt_and_fewer_tools(workspace: Path) -> None:
    tools = default_tools(workspace).definitions()
    messages, offered, _, doc = tiny_turn(opening(workspace, "Fix calc.py"), tools)
    assert messages[0] == {"role": "system", "content": TINY_PROMPT}
    assert [t["function"]["name"] for t in offered] == NAMES  # no search_files
    read = next(t for t in offered if t["function"]["name"] == "read_file")
    assert list(read["function"]["parameters"]["properties"]) == ["path"]  # no line range
    system = plain_messages(messages, offered, doc)[0]["content"]
    assert len(system) < 1200 and "search_files" not in system
    assert tiny_tools(tools[:1]) == [read]
    assert is_tiny(268_098_176) and not is_tiny(8_000_000_000) and not is_tiny(0)


# -- the grammar ----------------------------------------------------------------------------------
def test_literals_escape_quotes_and_backslashes() -> None:
    assert literal('say "hi" \\ bye') == '"say \\"hi\\" \\\\ bye"'
    assert json_gbnf({"type": "integer"}) is None  # outside the subset: the general converter
    assert json_gbnf({"type": "object", "properties": {"a": {"type": "string"}}}) is None


@pytest.fixture(scope="module")
def vocab() -> Any:
    gguf = optional_deps.tiny_gguf()
    from llama_cpp import Llama

    return Llama(model_path=str(gguf), vocab_only=True, verbose=False)


def accepts(vocab: Any, schema: dict[str, Any], text: str) -> bool:
    """Whether the grammar of ``schema`` lets the model write exactly ``text``: each token of
    it in turn, then the end."""
    from localhand.models._grammar_filter import GrammarFilter

    gbnf = json_gbnf(schema)
    assert gbnf is not None
    grammar = GrammarFilter(vocab, gbnf)
    try:
        ids: list[int] = []
        tokens = vocab.tokenize(text.encode(), add_bos=False, special=False)
        for token in [*tokens, vocab.token_eos()]:
            scores = np.zeros(vocab.n_vocab(), dtype=np.single)
            scores[token] = 10.0  # the model's favourite: the grammar alone decides
            if not np.isfinite(grammar(np.array(ids, dtype=np.intc), scores)[token]):
                return False
            ids.append(token)
        return True
    finally:
        grammar.close()


def dumps(name: str, **args: Any) -> str:
    return json.dumps({"name": name, "arguments": args})


def test_the_grammar_refuses_a_file_that_does_not_exist(vocab: Any, workspace: Path) -> None:
    schema = tiny_schema(Knowledge.of(opening(workspace, "Fix calc.py")), NAMES)
    assert accepts(vocab, schema, dumps("read_file", path="calc.py"))
    assert not accepts(vocab, schema, dumps("read_file", path="notes.txt"))
    assert not accepts(vocab, schema, dumps("read_file", path="calc.py", start_line=1))


def test_the_grammar_refuses_a_tool_not_offered(vocab: Any, workspace: Path) -> None:
    schema = tiny_schema(Knowledge.of(opening(workspace, "Fix calc.py")), NAMES)
    assert not accepts(vocab, schema, dumps("search_files", pattern="bug"))
    assert not accepts(vocab, schema, dumps("delete_file", path="calc.py"))
    assert not accepts(vocab, schema, json.dumps({"final_answer": "done"}))  # nothing done yet


def test_the_grammar_holds_edits_to_lines_of_the_file(vocab: Any, workspace: Path) -> None:
    messages = opening(workspace, "Fix calc.py") + ran(workspace, "read_file", path="calc.py")
    schema = tiny_schema(Knowledge.of(messages), NAMES)
    good = dumps("edit_file", path="calc.py", old_text='print("ok")', new_text='print("fine")')
    assert accepts(vocab, schema, good)  # quotes in a line: escaped right
    assert not accepts(
        vocab, schema, dumps("edit_file", path="calc.py", old_text="return a * b", new_text="x")
    )
    assert not accepts(
        vocab, schema, dumps("edit_file", path="check.py", old_text="import calc", new_text="x")
    )  # unread
    same = 'print("ok")'
    assert not accepts(
        vocab, schema, dumps("edit_file", path="calc.py", old_text=same, new_text=same)
    )  # no change: the tool refuses it
    for new in ('print("ok")  # done', 'print("o', "", 'print("ok"'):
        assert accepts(
            vocab, schema, dumps("edit_file", path="calc.py", old_text=same, new_text=new)
        ), new


def test_the_grammar_creates_only_new_files(vocab: Any, workspace: Path) -> None:
    schema = tiny_schema(Knowledge.of(opening(workspace, "Add a test")), NAMES)
    assert accepts(vocab, schema, dumps("write_file", path="test_calc.py", content="import calc"))
    assert accepts(vocab, schema, dumps("write_file", path="calc.pyi", content="x"))
    assert accepts(vocab, schema, dumps("write_file", path="calc", content="x"))
    assert not accepts(vocab, schema, dumps("write_file", path="calc.py", content="x"))
    assert not accepts(vocab, schema, dumps("write_file", path="/etc/passwd", content="x"))
    assert not accepts(vocab, schema, dumps("write_file", path="../up.txt", content="x"))
