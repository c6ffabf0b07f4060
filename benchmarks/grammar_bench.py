"""What the per-turn reply mask costs per token on the 270M model: decoding free, under the
embedded backend's llguidance mask (``localhand.models._grammar_filter``), and under
llama-cpp-python's own grammar sampler (its public ``grammar=``, llama.cpp's GBNF engine,
which checks the whole vocabulary at every token). The same prompt and reply schema (a tiny
policy's write_file-or-answer schema) each time, alternated, several rounds; the prompt is
evaluated once beforehand, so the times are of decoding. Also the one-off cost of feeding
llguidance the model's vocabulary (per process, at the first constrained reply).

    python benchmarks/grammar_bench.py [--rounds 3] [--tokens 40]

Prints one JSON object: milliseconds per token, median over the rounds, per way.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

SCHEMA: dict[str, Any] = {
    "anyOf": [
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": ["write_file"]},
                "arguments": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "enum": ["hello.txt"]},
                        "content": {"type": "string"},
                    },
                    "required": ["path", "content"],
                    "additionalProperties": False,
                },
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"final_answer": {"type": "string"}},
            "required": ["final_answer"],
            "additionalProperties": False,
        },
    ]
}
PROMPT = (
    "<start_of_turn>user\nCreate hello.txt containing a short poem about the sea. Reply with "
    'JSON: {"name": "write_file", "arguments": {"path": ..., "content": ...}}'
    "<end_of_turn>\n<start_of_turn>model\n"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=40)
    args = parser.parse_args(argv)
    try:
        from llama_cpp import Llama, LlamaGrammar, LogitsProcessorList

        from localhand.models._grammar_filter import Vocabulary, grammar_for
        from localhand.session.backend import default_gguf
    except ImportError as missing:
        print(json.dumps({"error": f"needs the embedded extra: {missing}"}))
        return 0
    gguf = default_gguf()
    if gguf is None:
        print(json.dumps({"error": "needs the embedded extra: no tiny model installed"}))
        return 0
    llm = Llama(model_path=str(gguf), n_ctx=2048, verbose=False, seed=0)
    vocabulary = Vocabulary(llm)
    began = time.perf_counter()
    vocabulary.tokenizer()
    vocab_s = time.perf_counter() - began
    prompt = llm.tokenize(PROMPT.encode(), add_bos=True, special=True)
    llm.create_completion(prompt, max_tokens=1, temperature=0.2, seed=0)  # prompt in the cache
    gbnf = LlamaGrammar.from_json_schema(json.dumps(SCHEMA), verbose=False)
    cache: dict[str, str] = {}

    def way(name: str) -> dict[str, Any]:
        if name == "llguidance":
            mask = grammar_for(vocabulary, SCHEMA, cache, print)
            return {"logits_processor": LogitsProcessorList([mask])}
        if name == "llama_cpp_grammar":
            return {"grammar": gbnf}
        return {}

    per_token: dict[str, list[float]] = {"free": [], "llguidance": [], "llama_cpp_grammar": []}
    for _ in range(args.rounds):
        for name in per_token:
            began = time.perf_counter()
            out = llm.create_completion(
                prompt, max_tokens=args.tokens, temperature=0.2, seed=0, **way(name)
            )
            used = max(1, out["usage"]["completion_tokens"])
            per_token[name].append(1000 * (time.perf_counter() - began) / used)
    result = {
        "benchmark": "grammar",
        "model": gguf.name,
        "rounds": args.rounds,
        "ms_per_token": {k: round(statistics.median(v), 1) for k, v in per_token.items()},
        "llguidance_vocabulary_s": round(vocab_s, 2),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
