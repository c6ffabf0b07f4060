"""The token estimate: close to a real tokenizer on code, tool output and prose, a little high
rather than low, and cheap to repeat over a whole conversation."""

from __future__ import annotations

import json

import pytest

from localhand.models import tokens
from localhand.models.tokens import estimate_prompt_tokens, estimate_text_tokens
from localhand.tools import default_tools

CODE = '''def parse_item(row: dict[str, str]) -> Item:
    """One inventory row from the CSV file."""
    try:
        qty = int(row["qty"])
        price = float(row["price"])
    except (KeyError, ValueError) as error:
        raise ValueError(f"bad row {row!r}: {error}") from None
    if qty < 0:
        raise ValueError(f"negative quantity in {row['sku']}")
    return Item(sku=row["sku"].strip(), qty=qty, price=round(price, 2))


def low_stock(items: list[Item], threshold: int = 5) -> list[Item]:
    return sorted((i for i in items if i.qty < threshold), key=lambda i: (i.qty, i.sku))
'''
NUMBERED = "\n".join(f"{n:>5}| {line}" for n, line in enumerate(CODE.splitlines(), 1))
"""As read_file shows it."""
PROSE = (
    "Small local models often answer an agentic task before they have looked at the "
    "workspace at all. The loop notices this the first time it happens and asks the model "
    "to use its tools instead; a model that keeps answering without acting is stopped after "
    "a couple of reminders, and the result says why, so that a person can decide what to do."
)
PYTEST = """============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.4, pluggy-1.5.0
rootdir: /tmp/ws
collected 14 items

tests/test_core.py ......F.                                              [ 57%]
tests/test_io.py ......                                                  [100%]

=================================== FAILURES ===================================
______________________________ test_total_value _______________________________
    def test_total_value():
>       assert total_value(ITEMS) == 152.5
E       assert 150.0 == 152.5
tests/test_core.py:41: AssertionError
=========================== short test summary info ============================
FAILED tests/test_core.py::test_total_value - assert 150.0 == 152.5
========================= 1 failed, 13 passed in 0.08s =========================
"""
CHINESE = "找不到配置文件。请检查路径后重试；更改尚未保存。"

# Gemma 3's tokenizer (llama.cpp, vocab only; see benchmarks/_common.Tokenizer) counted:
MEASURED = [(CODE, 187), (NUMBERED, 237), (PROSE, 69), (PYTEST, 224), (CHINESE, 14)]


@pytest.mark.parametrize(("text", "measured"), MEASURED)
def test_texts_are_estimated_close_to_a_real_tokenizer_and_not_below(
    text: str, measured: int
) -> None:
    # Four characters a token would say 146, 170, 84, 217 and 6.
    estimate = estimate_text_tokens(text)
    assert 0.95 * measured <= estimate <= 1.3 * measured


def test_read_file_output_and_code_count_more_tokens_than_prose() -> None:
    assert len(NUMBERED) / estimate_text_tokens(NUMBERED) < 3.1
    assert len(CODE) / estimate_text_tokens(CODE) < 3.3
    assert 4.2 < len(PROSE) / estimate_text_tokens(PROSE) < 5


def test_a_call_counted_from_its_structure_matches_its_json_text() -> None:
    arguments = {"path": "inv/core.py", "old_text": "    if qty < 0:", "new_text": CODE}
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"function": {"name": "edit_file", "arguments": arguments}}],
    }
    as_text = json.dumps({"name": "edit_file", "arguments": arguments}, ensure_ascii=False)
    structural = estimate_prompt_tokens([message]) - tokens.MESSAGE_TOKENS - tokens.CALL_TOKENS
    assert abs(structural - estimate_text_tokens(as_text)) <= 0.1 * estimate_text_tokens(as_text)
    # Arguments sent as a JSON string (OpenAI style), or odd shapes, are counted too.
    odd = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}, 3]}
    assert estimate_prompt_tokens([odd]) > tokens.MESSAGE_TOKENS + 2 * tokens.CALL_TOKENS


def test_tool_schemas_are_recounted_when_they_change_in_place(tmp_path) -> None:
    definitions = default_tools(tmp_path).definitions()
    before = estimate_prompt_tokens([], definitions)
    assert estimate_prompt_tokens([], definitions) == before
    assert 700 < before < 1000  # the tokenizer counts 629, plus about 100 of template
    definitions[0]["function"]["description"] += " " + PROSE
    assert estimate_prompt_tokens([], definitions) > before + 60


def test_every_message_costs_its_markup_and_tool_results_more() -> None:
    user = {"role": "user", "content": "hi"}
    tool = {"role": "tool", "content": "hi", "tool_name": "read_file"}
    assert estimate_prompt_tokens([user]) == tokens.MESSAGE_TOKENS + 1
    assert estimate_prompt_tokens([tool]) == tokens.MESSAGE_TOKENS + 1 + tokens.TOOL_RESULT_TOKENS
    assert estimate_prompt_tokens([{"role": "assistant", "content": None}]) == 5


def test_odd_text_is_estimated_without_failing() -> None:
    assert estimate_text_tokens("") == 0
    assert estimate_text_tokens("\ud800 lone surrogate") > 0
    assert estimate_text_tokens("=" * 80) <= 20  # a rule is a few tokens, not 80
    message = {"role": "user", "content": ["not", "a", "string"], "thinking": 42}
    assert estimate_prompt_tokens([message]) > tokens.MESSAGE_TOKENS


def test_the_memory_of_counted_texts_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_CACHE", {})
    monkeypatch.setattr(tokens, "_cache_chars", 0)
    monkeypatch.setattr(tokens, "_CACHE_MAX_CHARS", 1000)
    for n in range(25):
        assert estimate_text_tokens(f"{n:02} " + "word " * 20) > 0
    assert tokens._cache_chars == 5 * 103  # cleared at 1,030 and 2,060 characters
    assert len(tokens._CACHE) == 5
