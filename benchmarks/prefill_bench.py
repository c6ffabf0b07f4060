"""Prefill amplification per model family: how much of each prompt the server must read again.

For each family of ``tests/chat_templates.py``: localhand's 12 requests for a task (ten calls,
one nudged empty reply, the answer), calls native and written as text, rendered through the
family's real chat template as llama-server renders it. A server that keeps the previous
prompt in its cache (llama-server's slot, Ollama's runner) reads only what follows the
longest common prefix of the new prompt and the old one; an append-only sequence would read
each token once, the last prompt's length in all.

    amplification = sum over requests of (prompt tokens - tokens shared with the previous prompt)
                    / tokens of the last prompt

1.0 is ideal. Tokens are estimated, not counted: 4 characters a token (the estimate
``ScriptedModel`` uses), the same for every family, so ratios compare and absolute counts are
rough. The server's own generated tokens are assumed not reused (reuse would only help the
families whose template repeats the model's output: see test_templates.SAME_WORDS).

Besides each family's profile, the variants the profiles chose between are measured:
``reasoning_dropped`` (every turn's reasoning left out, as localhand did before profiles) and,
for text calls, ``text_kept`` (the reply stored as written, its result a plain user turn)
against the profile's choice. A variant a template refuses reports its error.

    python benchmarks/prefill_bench.py            # JSON on stdout
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from jinja2.exceptions import TemplateError

from chat_templates import (
    FAMILIES,
    SHAPES,
    common_prefix,
    family_profile,
    first_break,
    render_sequence,
    request_sequence,
)

CHARS_PER_TOKEN = 4


def tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


def measure(prompts: list[str]) -> dict[str, object]:
    prefilled = 0
    previous = ""
    for prompt in prompts:
        prefilled += tokens(len(prompt)) - tokens(common_prefix(prompt, previous))
        previous = prompt
    ideal = tokens(len(prompts[-1]))
    return {
        "prefilled_tokens": prefilled,
        "ideal_tokens": ideal,
        "amplification": round(prefilled / ideal, 3),
        "first_break": first_break(prompts),
    }


def variants(profile, shape: str) -> dict[str, object]:
    found = {"profile": profile, "reasoning_dropped": replace(profile, reasoning_return="never")}
    if shape == "text" and profile.text_call_history != "keep_text":
        found["text_kept"] = replace(profile, text_call_history="keep_text")
    return found


def main() -> None:
    report: dict[str, object] = {
        "token_estimate": f"{CHARS_PER_TOKEN} characters a token",
        "requests": 12,
        "families": {},
    }
    cache: dict[tuple, list] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for family in FAMILIES:
            base = family_profile(family)
            row: dict[str, object] = {"profile": base.name, "template": family.template}
            for shape in SHAPES:
                results: dict[str, object] = {}
                for label, profile in variants(base, shape).items():
                    key = (profile, shape)
                    if key not in cache:
                        root = Path(scratch) / f"{len(cache)}"
                        cache[key] = request_sequence(profile, shape, root)  # type: ignore[arg-type]
                    try:
                        results[label] = measure(render_sequence(family, cache[key], profile))
                    except TemplateError as exc:
                        results[label] = {"error": str(exc)[:200]}
                row[shape] = results
            report["families"][family.key] = row  # type: ignore[index]
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
