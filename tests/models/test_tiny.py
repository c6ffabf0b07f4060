"""The tiny policy the agent holds for a model that declares itself ``tiny``
(``localhand.run.tiny``): what such a model may call, learnt from tool calls and their results
(never their output text), and the llguidance grammar that holds a reply to it. The policy
tests run the real file tools on a real workspace and need no model; the grammar tests load
only the tiny model's vocabulary, so they need the embedded extra."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import optional_deps
from localhand import Agent
from localhand.events import EventBus, EventLog
from localhand.evidence.verify import CommandCheck
from localhand.models._grammar_json import json_lark
from localhand.models.base import ChatOptions
from localhand.models.scripted import ScriptedModel
from localhand.run.guardrails import Limits
from localhand.run.tiny import tiny_policy
from localhand.run.tiny.knowledge import task_words
from localhand.run.tiny.policy import TINY_PROMPT, TinyPolicy
from localhand.tools import default_tools
from localhand.types import Message, Reply, ToolCall, ToolResult

CALC = 'def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n\nprint("ok")\n'


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "lib").mkdir(parents=True)
    (root / "calc.py").write_text(CALC)
    (root / "check.py").write_text("import calc\n")
    (root / "lib" / "util.py").write_text("X = 1\n")
    return root


def policy(workspace: Path, task: str, checks: Sequence[str] = ()) -> TinyPolicy:
    return TinyPolicy(workspace, task, default_tools(workspace).definitions(), checks)


def run(held: TinyPolicy, workspace: Path, name: str, **args: Any) -> ToolResult:
    """A call through the real tools, observed by the policy as the agent observes it."""
    call = ToolCall(name, args)
    result = default_tools(workspace).execute(call)
    held.observe(call, result)
    return result


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
    found = []
    for args in branches(schema).get("edit_file", []):
        (path,), (old,) = args["path"]["enum"], args["old_text"]["enum"]
        not_these = args["new_text"]["not"]["enum"]  # a real change
        assert old in not_these and f"{old}\n" in not_these and "" in not_these
        found.append((path, old))
    return found


# -- what may be called --------------------------------------------------------------------------
def test_only_files_known_to_exist_may_be_read(workspace: Path) -> None:
    held = policy(workspace, "Fix the bug in calc.py")
    allowed = branches(held.schema())
    assert allowed["read_file"] == [{"path": {"type": "string", "enum": ["calc.py", "check.py"]}}]
    assert allowed["list_directory"] == [{"path": {"type": "string", "enum": ["lib"]}}]
    assert "final_answer" not in allowed  # nothing done yet
    run(held, workspace, "list_directory", path="lib")
    (read,) = branches(held.schema())["read_file"]
    assert read["path"]["enum"] == ["calc.py", "check.py", "lib/util.py"]


def test_knowledge_comes_from_calls_and_ok_not_from_output_text(workspace: Path) -> None:
    held = policy(workspace, "Fix calc.py")
    # A result whose text says nothing the old string matching knew: the file's lines come
    # from the workspace, because the call succeeded.
    held.observe(ToolCall("read_file", {"path": "calc.py"}), ToolResult("(shown)", ok=True))
    assert ("calc.py", 'print("ok")') in edits(held.schema())
    # A failed read teaches nothing, whatever its text looks like.
    held.observe(ToolCall("read_file", {"path": "check.py"}), ToolResult("1| x", ok=False))
    assert all(path == "calc.py" for path, _ in edits(held.schema()))


def test_edits_hold_to_lines_of_the_file_it_has_read(workspace: Path) -> None:
    held = policy(workspace, "Fix calc.py")
    run(held, workspace, "read_file", path="calc.py")
    found = edits(held.schema())
    assert ("calc.py", "def add(a, b):") in found
    assert ("calc.py", "return a - b") not in found  # twice in the file: the edit would fail
    assert "read_file" not in branches(held.schema()) or all(
        "calc.py" not in b["path"]["enum"] for b in branches(held.schema())["read_file"]
    )


def test_after_a_change_the_check_runs_and_its_pass_ends_the_run(workspace: Path) -> None:
    held = policy(workspace, "Make add add, then run `python3 check.py`")
    run(held, workspace, "read_file", path="calc.py")
    run(held, workspace, "edit_file", path="calc.py", old_text='print("ok")', new_text="pass")
    assert branches(held.schema()) == {
        "run_command": [{"command": {"type": "string", "enum": ["python3 check.py"]}}]
    }
    run(held, workspace, "run_command", command="python3 check.py")
    assert branches(held.schema()) == {"final_answer": [{}]}


def test_without_a_quoted_check_the_projects_own_is_used(workspace: Path) -> None:
    (workspace / "Makefile").write_text("test:\n\tpython3 check.py\n")
    definitions = default_tools(workspace).definitions()
    held = tiny_policy(True, workspace, "Create notes.txt saying hi.", definitions, [])
    assert held is not None and held.known.checks == ["make test"]
    verify = [CommandCheck("python3 check.py")]
    held = tiny_policy(True, workspace, "Create notes.txt saying hi.", definitions, verify)
    assert held is not None and held.known.checks == ["python3 check.py"]  # --verify wins
    assert tiny_policy(False, workspace, "Create notes.txt", definitions, []) is None


@pytest.mark.parametrize(
    "name", ["config.prod.json", "test_my.module.py", "v1.2.notes.md", "src/app.py", "a.b.c.txt"]
)
def test_file_names_with_several_dots_are_files_the_task_names(name: str) -> None:
    quoted, targets = task_words(f"Create {name} with a line, then run `python3 check.py`.")
    assert targets == [name]
    assert quoted == ["python3 check.py"]


def test_versions_and_abbreviations_are_not_file_names() -> None:
    assert task_words("Pin requests>=2.31 (e.g. in a file), python 3.11.")[1] == []
    assert task_words("Assert calc.double(2) == 4 in test_my.module.py")[1] == ["test_my.module.py"]


def test_code_in_the_task_is_not_a_file_to_create(workspace: Path) -> None:
    held = policy(workspace, "Use os.path in lib.helpers.py, not self.items")
    assert held.known.targets == ["lib.helpers.py"]


def test_a_multi_dot_target_is_the_only_new_file(workspace: Path) -> None:
    held = policy(workspace, "Write v1.2.notes.md saying Released.")
    (write,) = branches(held.schema())["write_file"]
    assert write["path"] == {"type": "string", "enum": ["v1.2.notes.md"]}


def test_once_its_check_fails_it_may_repair_what_it_wrote(workspace: Path) -> None:
    (workspace / "check_total.py").write_text(
        "import sys, pathlib\nsys.exit(pathlib.Path('total.txt').read_text().strip() != '42')\n"
    )
    held = policy(workspace, "Create total.txt with 42, then run `python3 check_total.py`")
    run(held, workspace, "write_file", path="total.txt", content="the total is 41")
    assert edits(held.schema()) == []  # its own lines, while no check says they are wrong
    result = run(held, workspace, "run_command", command="python3 check_total.py")
    assert not result.ok
    allowed = branches(held.schema())
    assert ("total.txt", "the total is 41") in edits(held.schema())
    (rewrite,) = allowed["write_file"]  # its own file, with other content than it failed with
    assert rewrite["path"] == {"type": "string", "enum": ["total.txt"]}
    assert "the total is 41" in rewrite["content"]["not"]["enum"]
    assert "the total is 41\n" in rewrite["content"]["not"]["enum"]
    run(held, workspace, "write_file", path="total.txt", content="42")
    run(held, workspace, "run_command", command="python3 check_total.py")
    assert branches(held.schema()) == {"final_answer": [{}]}


# -- the agent holds it --------------------------------------------------------------------------
class TinyDouble(ScriptedModel):
    """A model that declares itself tiny and replies from a script, keeping what it was sent."""

    tiny = True

    def __init__(self, replies: list[Reply]) -> None:
        super().__init__(replies, name="tiny-double")

    @property
    def sent(self) -> list[tuple[list[Message], list[str], ChatOptions | None]]:
        """Each request: its messages, the names of the tools offered, its options."""
        return [
            (c.messages, [str(t["function"]["name"]) for t in c.tools or []], c.options)
            for c in self.calls
        ]


def test_the_agent_sends_the_policys_prompt_tools_and_schema(workspace: Path) -> None:
    model = TinyDouble(
        [
            Reply(tool_calls=(ToolCall("write_file", {"path": "hello.txt", "content": "hi"}),)),
            Reply(tool_calls=(ToolCall("run_command", {"command": "python3 check.py"}),)),
            Reply("Wrote hello.txt."),
        ]
    )
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    agent = Agent(model, workspace, limits=Limits(max_iterations=5), bus=bus)
    result = agent.run("Create hello.txt, then run `python3 check.py`")
    assert result.status != "error", result
    first_messages, names, options = model.sent[0]
    assert first_messages[0]["content"].startswith(TINY_PROMPT)  # what the model saw ...
    assert agent.messages[0]["content"] == first_messages[0]["content"]  # ... is what is kept
    assert names == ["read_file", "edit_file", "write_file", "run_command", "list_directory"]
    assert options is not None and options.reply_schema is not None
    second = model.sent[1][2]
    assert second is not None and second.reply_schema is not None
    assert branches(second.reply_schema) == {
        "run_command": [{"command": {"type": "string", "enum": ["python3 check.py"]}}]
    }
    statuses = [e.message for e in log.of_type("model_status")]
    assert any("tiny policy" in s and TINY_PROMPT[:40] in s for s in statuses)


def test_a_model_that_is_not_tiny_gets_no_reply_schema(workspace: Path) -> None:
    model = TinyDouble(
        [Reply(tool_calls=(ToolCall("read_file", {"path": "calc.py"}),)), Reply("ok")]
    )
    model.tiny = False
    Agent(model, workspace, limits=Limits(max_iterations=3), require_action=False).run("Look")
    messages, names, options = model.sent[0]
    assert options is not None and options.reply_schema is None
    assert "search_files" in names and not messages[0]["content"].startswith(TINY_PROMPT)


# -- the grammar, on llguidance ----------------------------------------------------------------
def test_schemas_outside_the_subset_go_to_llguidances_json_compiler() -> None:
    assert json_lark({"type": "integer"}) is None
    assert json_lark({"type": "object", "properties": {"a": {"type": "string"}}}) is None


@pytest.fixture(scope="module")
def vocabulary() -> Any:
    gguf = optional_deps.tiny_gguf()
    from llama_cpp import Llama

    from localhand.models._grammar_filter import Vocabulary

    llm = Llama(model_path=str(gguf), vocab_only=True, verbose=False)
    vocab = Vocabulary(llm)
    vocab.tokenizer()
    return llm, vocab


def accepts(vocabulary: Any, schema: dict[str, Any], text: str) -> bool:
    """Whether the grammar of ``schema`` lets the model write exactly ``text``: each token of
    it in turn, then the end."""
    from localhand.models._grammar_filter import grammar_for

    llm, vocab = vocabulary
    grammar = grammar_for(vocab, schema, {}, pytest.fail)
    ids: list[int] = []
    tokens = llm.tokenize(text.encode(), add_bos=False, special=False)
    for token in [*tokens, llm.token_eos()]:
        scores = np.zeros(llm.n_vocab(), dtype=np.single)
        scores[token] = 10.0  # the model's favourite: the grammar alone decides
        if not np.isfinite(grammar(np.array(ids, dtype=np.intc), scores)[token]):
            return False
        ids.append(token)
    return True


def dumps(name: str, **args: Any) -> str:
    return json.dumps({"name": name, "arguments": args})


def test_the_grammar_refuses_a_file_that_does_not_exist(vocabulary: Any, workspace: Path) -> None:
    schema = policy(workspace, "Fix calc.py").schema()
    assert accepts(vocabulary, schema, dumps("read_file", path="calc.py"))
    assert not accepts(vocabulary, schema, dumps("read_file", path="notes.txt"))
    assert not accepts(vocabulary, schema, dumps("read_file", path="calc.py", start_line=1))
    assert not accepts(vocabulary, schema, dumps("search_files", pattern="bug"))
    assert not accepts(vocabulary, schema, json.dumps({"final_answer": "done"}))


def test_the_grammar_holds_edits_to_real_changes(vocabulary: Any, workspace: Path) -> None:
    held = policy(workspace, "Fix calc.py")
    run(held, workspace, "read_file", path="calc.py")
    schema = held.schema()
    same = 'print("ok")'
    good = dumps("edit_file", path="calc.py", old_text=same, new_text='print("fine")')
    assert accepts(vocabulary, schema, good)  # quotes in a line: escaped right
    for no_change in (same, f"{same}\n", f" {same}", ""):  # no change but white space
        edit = dumps("edit_file", path="calc.py", old_text=same, new_text=no_change)
        assert not accepts(vocabulary, schema, edit), no_change
    for new in ('print("ok")  # done', 'print("o', 'print("ok"', 'print("ok")\nprint(1)'):
        assert accepts(
            vocabulary, schema, dumps("edit_file", path="calc.py", old_text=same, new_text=new)
        ), new


def test_the_grammar_creates_only_new_files(vocabulary: Any, workspace: Path) -> None:
    schema = policy(workspace, "Add a test").schema()
    assert accepts(vocabulary, schema, dumps("write_file", path="test_calc.py", content="x"))
    assert accepts(vocabulary, schema, dumps("write_file", path="calc.pyi", content="x"))
    assert accepts(vocabulary, schema, dumps("write_file", path="config.prod.json", content="{}"))
    assert not accepts(vocabulary, schema, dumps("write_file", path="calc.py", content="x"))
    assert not accepts(vocabulary, schema, dumps("write_file", path="/etc/passwd", content="x"))
    assert not accepts(vocabulary, schema, dumps("write_file", path="../up.txt", content="x"))


def test_the_general_schema_compiles_with_json_dumps_spacing(vocabulary: Any) -> None:
    from localhand.models._json_calls import reply_schema

    schema = reply_schema(default_tools(Path(".")).definitions())
    assert json_lark(schema) is None  # optional arguments: llguidance's JSON compiler
    assert accepts(vocabulary, schema, dumps("read_file", path="a.py"))
    assert accepts(vocabulary, schema, json.dumps({"final_answer": "done"}))
    assert not accepts(vocabulary, schema, dumps("no_such_tool", path="a.py"))
