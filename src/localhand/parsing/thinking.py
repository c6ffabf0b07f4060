"""Separate deliberation from the answer.

Reasoning models mark thinking in several ways. All are found with ``str.find`` (linear, no
regular expression over model text):

- ``<think>…</think>`` (Qwen3, QwQ, DeepSeek-R1 and its distills, most Ollama thinking models);
  ``<thinking>``, ``<reasoning>`` from fine-tunes and prompts that ask for them;
- ``[THINK]…[/THINK]`` (Magistral, Mistral's reasoning models);
- ``<seed:think>…</seed:think>`` (ByteDance Seed-OSS);
- ``<|START_THINKING|>…<|END_THINKING|>`` (Cohere Command A / R7B);
- gpt-oss "harmony" channels: ``<|channel|>analysis<|message|>…<|end|>`` is thinking;
- Gemma 4: ``<|channel>thought\\n…<channel|>`` (its chat template; the word ``thought`` names the
  channel and is not part of the thinking).

Two quirks matter. Templates for Qwen3 and DeepSeek-R1 put the opening ``<think>`` in the
prompt, so the reply starts inside the block and only ``</think>`` appears: text before an
orphan closing tag is thinking. And a block that is never closed (the model ran out of tokens
or forgot) is thinking up to the end, because executing half-finished deliberation is worse
than asking again, with one exception: an unclosed block that ends in complete call markup
(``<think>… <tool_call>{…}</tool_call>``) ran into the call, as Ollama's Qwen3 parser reads it,
so ``split_thinking_parts`` reports that block's text for the parser to check. Tags inside a
quoted string of a JSON value (a file being written that mentions ``<think>``) are text, not
thinking.
"""

from __future__ import annotations

from localhand.parsing.json_scan import inside_strings
from localhand.parsing.mention import in_inline_code, mid_line

_PAIRS: tuple[tuple[str, str], ...] = (
    ("<think>", "</think>"),
    ("<thinking>", "</thinking>"),
    ("<reasoning>", "</reasoning>"),
    ("[THINK]", "[/THINK]"),
    ("<seed:think>", "</seed:think>"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    ("<|channel>", "<channel|>"),
    ("<|channel|>analysis<|message|>", "<|end|>"),
)
_GEMMA = 6  # index of Gemma 4's channel pair in _PAIRS
_HARMONY = len(_PAIRS) - 1
_WORD_TAGS = frozenset(range(5))  # <think>, <thinking>, <reasoning>, [THINK], <seed:think>


def _after_prose(text: str, pos: int) -> bool:
    """Whether prose (not another tag) precedes ``pos`` on its line."""
    j = pos - 1
    while j >= 0 and text[j] in " \t":
        j -= 1
    return mid_line(text, pos) and text[j] not in ">]|"


def _positions(text: str, needle: str) -> list[int]:
    found: list[int] = []
    start = text.find(needle)
    while start >= 0:
        found.append(start)
        start = text.find(needle, start + len(needle))
    return found


def split_thinking(text: str) -> tuple[str, list[str]]:
    """Return ``(visible text, thinking segments)``; visible text keeps its surrounding layout."""
    visible, thoughts, _ = split_thinking_parts(text)
    return visible, thoughts


def _thought(text: str, index: int) -> str:
    if index == _GEMMA and text.startswith("thought"):
        text = text[len("thought") :]  # the channel's name, not its content
    return text


def split_thinking_parts(text: str) -> tuple[str, list[str], str | None]:
    """``(visible text, thinking segments, open tail)``: the open tail is the raw text of a block
    that was never closed (it ran to the end of the reply), else None."""
    if not text:
        return "", [], None
    # (position, is_open, pair index, tag length), in text order.
    tags: list[tuple[int, bool, int, int]] = []
    for index, (opener, closer) in enumerate(_PAIRS):
        if opener not in text and closer not in text:
            continue
        tags.extend((pos, True, index, len(opener)) for pos in _positions(text, opener))
        tags.extend((pos, False, index, len(closer)) for pos in _positions(text, closer))
    if not tags:
        return text, [], None
    tags.sort()
    # A tag inside a quoted string of a JSON value is text: a call writing a file that
    # mentions <think> must not lose its text.
    quoted = inside_strings(text, [tag[0] for tag in tags])
    tags = [tag for tag in tags if tag[0] not in quoted]
    # A tag quoted as inline code ("Qwen3 wraps its reasoning in `<think>` tags") is prose.
    if "`" in text:
        tags = [tag for tag in tags if not in_inline_code(text, tag[0])]
    if not tags:
        return text, [], None

    visible: list[str] = []
    thoughts: list[str] = []
    cursor = 0
    inside: int | None = None  # index of the open pair
    opened_at = 0
    seen_tag = False
    for pos, is_open, index, length in tags:
        if pos < cursor:
            continue  # a tag nested in one we already consumed
        if inside is None:
            if is_open:
                visible.append(text[cursor:pos])
                inside = index
                opened_at = pos
                cursor = pos + length
            elif not seen_tag and index != _HARMONY:
                # Orphan closer before any opener: the template opened the block in the prompt.
                thoughts.append(_thought(text[cursor:pos], index))
                cursor = pos + length
            # Other stray closers are left in the text: removing them would hide nothing.
        elif not is_open and index == inside:
            thoughts.append(_thought(text[cursor:pos], index))
            cursor = pos + length
            inside = None
        seen_tag = True
    tail = None
    if inside is not None and inside in _WORD_TAGS and _after_prose(text, opened_at):
        # An opener in the middle of a sentence that nothing closes is a mention of the tag
        # ("models put their reasoning in <think> tags"), not a thought running to the end.
        visible.append(text[opened_at:])
    elif inside is not None:
        tail = _thought(text[cursor:], inside)
        thoughts.append(tail)
    else:
        visible.append(text[cursor:])
    return "".join(visible), [t.strip() for t in thoughts if t.strip()], tail
