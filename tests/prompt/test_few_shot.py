"""The system prompt's worked patterns per family (seed 000, issue 33): a model whose calls
travel as text sees them written in the format it is to write, one that calls natively sees
today's named calls, and every variant stays within the prompt budget."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import optional_deps
from localhand import Agent
from localhand.models.ollama import OllamaModel
from localhand.models.openai_compat import OpenAICompatModel
from localhand.models.scripted import ScriptedModel
from localhand.parsing import parse_tool_calls
from localhand.profiles import GENERIC, PROFILES, profile_for, read_profiles
from localhand.profiles.formats import write_call
from localhand.prompt.system import (
    _FIX_STEPS,
    _SEARCH_STEP,
    SCHEMA_CALLS,
    SYSTEM_PROMPT,
    call_format,
    system_prompt,
)
from localhand.run.guardrails import Limits

FORMATS = sorted({p.text_format for p in PROFILES} | {SCHEMA_CALLS})
STEPS = [*_FIX_STEPS, _SEARCH_STEP]


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_example_call_is_written_in_the_format_and_reads_back_as_that_call(fmt: str) -> None:
    prompt = system_prompt(fmt)
    for name, args, _, purpose in STEPS:
        written = write_call(fmt, name, args)
        if purpose == "all pass":  # the first call again: named, not written twice
            assert prompt.count(written) == 1 and "→ the first call again (all pass)" in prompt
            continue
        assert f"→ {purpose}:\n{written}\n" in prompt, (fmt, name)
        parsed = parse_tool_calls({"role": "assistant", "content": written})
        assert [(c.name, dict(c.arguments)) for c in parsed.calls] == [(name, args)], fmt
    assert "→ run_command {" not in prompt  # no named call left to imitate
    assert "tool-calling interface" not in prompt
    assert "Write tool calls as the examples do" in prompt


def test_native_calling_keeps_the_named_calls_and_the_interface_rule() -> None:
    assert system_prompt(None) == SYSTEM_PROMPT
    assert '→ run_command {"command": "python -m pytest -q test_math.py"}' in SYSTEM_PROMPT
    assert "Call tools through the tool-calling interface." in SYSTEM_PROMPT
    assert "<tool_call>" not in SYSTEM_PROMPT and "[TOOL_CALLS]" not in SYSTEM_PROMPT


def test_a_constrained_reply_shows_the_answer_as_the_json_it_must_be() -> None:
    prompt = system_prompt(SCHEMA_CALLS)
    answer = prompt.split("→ final reply: ")[1].splitlines()[0]
    assert list(json.loads(answer)) == ["final_answer"]


def test_every_family_s_first_prompt_stays_within_the_budget_on_every_backend() -> None:
    # Counted with a real tokenizer (Gemma 3's, from the tiny model's GGUF), as the published
    # figure is (benchmarks/prompt_bench.py); localhand's own estimate over-counts JSON.
    optional_deps.llama_cpp()
    optional_deps.tiny_gguf()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from _common import Tokenizer
    from prompt_bench import TARGET_FIXED, per_family

    families = per_family(Tokenizer())
    assert set(families) == {p.name for p in PROFILES} | {"generic"}
    seen = set()
    for name, row in families.items():
        for backend in ("ollama", "llama_server", "schema_mode", "as_text"):
            assert row[backend]["tokens"] <= TARGET_FIXED, (name, backend, row)
            seen.add(row[backend]["calls"])
    assert {"native", SCHEMA_CALLS} | {p.text_format for p in PROFILES} <= seen  # all measured


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (OllamaModel("qwen3:8b"), None),  # Ollama parses Qwen3's calls
        (OllamaModel("gemma3:4b"), "pythonic"),  # its template renders no calls
        (OllamaModel("deepseek-r1:8b"), "deepseek"),  # Ollama has no tools for it
        (OpenAICompatModel("DeepSeek-R1-Distill-Qwen-7B", host="http://127.0.0.1:9"), None),
        (
            OpenAICompatModel("granite-3.3-2b-instruct", host="http://127.0.0.1:9"),
            "tool_call_token",
        ),
        (
            OpenAICompatModel("qwen3-8b", host="http://127.0.0.1:9", tool_mode="schema"),
            SCHEMA_CALLS,
        ),
        (ScriptedModel([], name="some-model"), None),
    ],
)
def test_the_format_follows_the_family_and_the_backend(model: object, expected: str | None) -> None:
    name = model.name
    assert call_format(model, getattr(model, "profile", None) or profile_for(name)) == expected
    assert call_format(model, GENERIC) in (None, SCHEMA_CALLS)


def test_a_text_calling_family_gets_its_format_and_its_calls_run(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    model = ScriptedModel(
        ['```tool_code\nread_file(path="notes.txt")\n```', "notes.txt says hello."],
        name="gemma3:4b",
    )
    result = Agent(model, tmp_path, limits=Limits(max_iterations=4)).run("What does notes.txt say?")
    system = model.calls[0].messages[0]["content"]
    assert system == system_prompt("pythonic")
    assert 'read_file(path="mathlib.py")' in system
    assert result.termination_reason == "final_answer", result
    assert "hello" in model.calls[1].messages[-1]["content"]  # the call ran, its result came back


def test_a_prompt_given_by_the_user_is_kept_whatever_the_family(tmp_path: Path) -> None:
    model = ScriptedModel(["Nothing to do."], name="gemma3:4b")
    Agent(model, tmp_path, system_prompt="Be brief.", require_action=False).run("hi")
    assert model.calls[0].messages[0]["content"] == "Be brief."


def test_a_profile_that_says_its_server_carries_no_calls_gets_its_own_format() -> None:
    # As a user writes it in localhand.toml for a llama-server started without --jinja.
    settings = read_profiles({"profiles": {"qwen3": {"native_tools_llama_server": False}}})
    profile = settings.resolve("qwen3-8b")
    model = OpenAICompatModel("qwen3-8b", host="http://127.0.0.1:9", profile=profile)
    assert call_format(model, profile) == "hermes"
    assert call_format(OllamaModel("qwen3:8b"), profile) is None  # Ollama still carries them
    prompt = system_prompt(call_format(model, profile))
    assert '<tool_call>\n{"name": "read_file", "arguments": {"path": "mathlib.py"}}' in prompt
