"""localhand's real requests through the real chat templates of each family (issue 19).

For each family: the 12 requests of a task (``chat_templates.STEPS``: ten calls, one empty reply
that localhand nudges, the answer), once with the calls native and once written as text in
the family's own format, shaped by the family's profile, converted by localhand's OpenAI wire
code, rendered as llama-server renders them. Asserted per family: no template error, and each
prompt extends the previous one byte for byte except where ``KNOWN_BREAKS`` says, which is data:
the test fails when a family starts or stops breaking, or breaks elsewhere.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from jinja2.exceptions import TemplateError

from chat_templates import (
    FAMILIES,
    SHAPES,
    SOURCES,
    TEMPLATES,
    Family,
    Request,
    family_profile,
    first_break,
    load_template,
    render_sequence,
    request_sequence,
    to_wire,
)
from localhand.profiles import GENERIC, PROFILES, Profile
from localhand.profiles.formats import write_call

KNOWN_BREAKS: dict[tuple[str, str], int] = {
    # The nudge (request 9) is a new user query: the template stops rendering the reasoning
    # of every assistant turn before it, so the prompt changes from the first call on.
    ("qwen3", "native"): 9,
    ("qwen3", "text"): 9,
    ("glm-4.5", "native"): 9,
    ("glm-4.5", "text"): 9,
    ("glm-4.6", "native"): 9,
    ("glm-4.6", "text"): 9,
    # The empty reply is left out (harmony would take it for a final answer and drop the
    # analysis of every call before it), so request 8's generation prompt,
    # "<|start|>assistant", is not followed by an assistant turn: 18 characters re-read.
    ("gpt-oss", "native"): 9,
    ("gpt-oss", "text"): 9,
    # [AVAILABLE_TOOLS] is written just before the last [INST]: a nudge moves it.
    ("mistral-small-3.2", "native"): 9,
    ("mistral-small-3.2", "text"): 9,
    # The generation prompt opens "<think>\n", which no rendered assistant turn repeats
    # (the template cuts each turn's thinking out), so no prompt extends the one before.
    ("deepseek-r1", "native"): 2,
    ("deepseek-r1", "text"): 2,
}

_SEQUENCES: dict[tuple[str, str], list[Request]] = {}


@pytest.fixture(scope="module")
def sequences(tmp_path_factory: pytest.TempPathFactory):
    """The requests per profile and shape, made once: families sharing a profile share them."""

    def get(profile: Profile, shape: str) -> list[Request]:
        key = (profile.name, shape)
        if key not in _SEQUENCES:
            root = tmp_path_factory.mktemp(f"{profile.name}-{shape}")
            _SEQUENCES[key] = request_sequence(profile, shape, root)  # type: ignore[arg-type]
        return _SEQUENCES[key]

    return get


def test_every_template_is_stored_as_its_source_says() -> None:
    stored = sorted(p.name for p in TEMPLATES.glob("*.jinja"))
    assert stored == sorted(SOURCES)
    for name, source in SOURCES.items():
        assert hashlib.sha256((TEMPLATES / name).read_bytes()).hexdigest() == source["sha256"]
        assert source["repo"] and source["path"] and source["commit"], name
    assert {f.template for f in FAMILIES} == set(SOURCES)


def test_every_profile_has_a_template_and_there_are_at_least_ten_families() -> None:
    covered = {family_profile(f).name for f in FAMILIES}
    assert covered == {p.name for p in PROFILES}
    assert len(covered) >= 10


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.key)
def test_the_requests_render_and_each_extends_the_one_before(
    family: Family, shape: str, sequences
) -> None:
    requests = sequences(family_profile(family), shape)
    assert len(requests) == 12
    prompts = render_sequence(family, requests)  # raises on a template error
    assert all(prompts), "a prompt rendered empty"
    assert first_break(prompts) == KNOWN_BREAKS.get((family.key, shape))


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.key)
def test_the_tools_the_calls_and_their_results_reach_the_model(family: Family, sequences) -> None:
    profile = family_profile(family)
    shape = "native" if profile.native_tools_llama_server else "text"
    last = render_sequence(family, sequences(profile, shape))[-1]
    if profile.native_tools_llama_server:  # Gemma 3's template knows no tools
        assert all(name in last for name in ("read_file", "edit_file", "run_command"))
    # A call's arguments (this pattern is in no tool result), and the check's result.
    assert "subtract|minus" in last
    assert "ok\n[Exit code 0.]" in last or "ok\\n[Exit code 0.]" in last
    assert "Your last reply had neither a tool call nor an answer" in last


def test_reasoning_goes_back_for_the_turns_the_profile_names(sequences) -> None:
    by_key = {f.key: f for f in FAMILIES}

    def last_prompt(key: str) -> str:
        family = by_key[key]
        return render_sequence(family, sequences(family_profile(family), "native"))[-1]

    qwen = last_prompt("qwen3")  # current turn: the calls after the nudge
    assert "Step 9:" in qwen and "Step 11:" in qwen and "Step 7:" not in qwen
    harmony = last_prompt("gpt-oss")  # the whole chain of calls, nudge or not
    assert "Step 1:" in harmony and "Step 11:" in harmony
    r1 = last_prompt("deepseek-r1")  # never
    assert "Step " not in r1


# Families whose template writes a native call as the model writes it in text: storing a
# text call natively gives the model its own words back (and the server its cached output).
# Not so: gpt-oss (the template puts the recipient before the channel and drops
# <|constrain|>), Mistral Small 3.2 (it adds [CALL_ID]), DeepSeek-R1 (it drops the opening
# <｜tool▁calls▁begin｜> after a tool output), GLM-4.5 (llama.cpp's template drops the newlines
# around <arg_key>; GLM-4.6's keeps them).
SAME_WORDS = {
    "qwen3",
    "qwen3-coder",
    "qwen2.5-coder",
    "llama3.1",
    "llama3.2",
    "devstral",
    "magistral",
    "gemma4",
    "granite-4.0",
    "phi-4-mini",
    "glm-4.6",
}


def test_a_text_call_stored_natively_renders_as_the_model_wrote_it(sequences) -> None:
    same = set()
    for family in FAMILIES:
        profile = family_profile(family)
        if profile.text_call_history != "native":
            continue
        last = render_sequence(family, sequences(profile, "text"))[-1]
        written = write_call(profile.text_format, "read_file", {"path": "calc.py"})
        if written in last:
            same.add(family.key)
    assert same == SAME_WORDS


def _generic_history(family: Family, tmp_path: Path) -> list[str]:
    """Prompts of the task as localhand sent them before profiles (no ids, tool roles)."""
    requests = request_sequence(GENERIC, "native", tmp_path)
    template = load_template(family.template)
    return [template.render(to_wire(r.messages, GENERIC), r.tools) for r in requests]


def test_without_its_profile_mistral_rejects_the_call_ids(tmp_path: Path) -> None:
    family = next(f for f in FAMILIES if f.key == "mistral-small-3.2")
    with pytest.raises(TemplateError, match="alphanumeric strings with length 9"):
        _generic_history(family, tmp_path)


def test_without_its_profile_gemma3_rejects_the_tool_results(tmp_path: Path) -> None:
    family = next(f for f in FAMILIES if f.key == "gemma3")
    with pytest.raises(TemplateError, match="roles must alternate"):
        _generic_history(family, tmp_path)
