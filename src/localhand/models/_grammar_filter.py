"""Constrained decoding for the embedded backend on llguidance, a maintained engine, as a
llama-cpp-python logits processor (its public ``logits_processor`` hook).

Why llguidance: llama-cpp-python's own grammar sampler (``grammar=``) sits in front of top-k,
so every token checks the whole vocabulary against the grammar, 262,144 tokens for Gemma 3:
measured on the 270M model, it doubles the time of each token (``benchmarks/grammar_bench.py``).
llguidance computes the mask of allowed tokens in about a millisecond, whatever the vocabulary.

It is fed llama.cpp's vocabulary through llama-cpp-python's public API (``detokenize`` of each
token; a control token is one that detokenizes to nothing without ``special``), once per
loaded model (a few seconds for 262,144 tokens; ``Vocabulary``). The tokens the model took
are fed to the matcher at the start of the next call, read from the ids the processor is
given; every token the grammar does not allow gets ``-inf``, and llama-cpp-python's usual
samplers (penalties, top-k, temperature) choose among the rest.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from localhand.models._grammar_json import json_lark

_JSON_OPTIONS: Any = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
"""Objects written as ``json.dumps`` writes them: how the history shows earlier calls."""
_ANY_OBJECT = {"type": "object"}


class Vocabulary:
    """llguidance's tokenizer for one loaded model, built on first use (seconds) and kept."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self._lock = threading.Lock()
        self._tokenizer: Any = None

    def tokenizer(self) -> Any:
        with self._lock:
            if self._tokenizer is None:
                self._tokenizer = _build(self._llm)
            return self._tokenizer


def _build(llm: Any) -> Any:
    import llguidance  # the embedded extra

    tokens: list[bytes] = []
    special: list[int] = []
    for token in range(llm.n_vocab()):
        text = llm.detokenize([token], special=True)
        if text and not llm.detokenize([token], special=False):  # a control token
            special.append(token)
            text = b"\xff" + text  # llguidance's mark of a special token
        tokens.append(text)

    class _Wrapped:
        eos_token_id = llm.token_eos()
        bos_token_id = llm.token_bos()
        special_token_ids = special

        def __init__(self) -> None:
            self.tokens = tokens

        def __call__(self, text: bytes) -> list[int]:
            return list(llm.tokenize(text, add_bos=False, special=False))

    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_Wrapped()))


def _closed(schema: Any) -> Any:
    """``schema`` with every object that lists its properties closed to others, unless it
    says otherwise: JSON Schema allows other keys by default, and llguidance keeps to that,
    where a reply must not invent arguments (llama.cpp's converter closed them too)."""
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _closed(value) for key, value in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema:
        out["additionalProperties"] = False
    return out


class GrammarFilter:
    """A llama-cpp-python logits processor holding the reply to an llguidance grammar.
    Single use: one per reply."""

    def __init__(self, tokenizer: Any, grammar: str) -> None:
        import llguidance  # the embedded extra

        self._matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
        if self._matcher.is_error():
            raise ValueError(self._matcher.get_error())
        self._eos = int(tokenizer.eos_token)
        self._seen: int | None = None

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self._seen is None:  # the first call: everything so far is prompt
            self._seen = len(input_ids)
        for token in input_ids[self._seen :]:
            self._matcher.consume_token(int(token))
        self._seen = len(input_ids)
        allowed = self.allowed(scores.size)
        if not allowed.any():  # the grammar is done (or broken): the reply ends here
            allowed[self._eos] = True
        return np.where(allowed, scores, -np.inf).astype(scores.dtype, copy=False)

    def allowed(self, size: int) -> np.ndarray:
        """Which of the ``size`` tokens may come next, as booleans."""
        bits = np.frombuffer(self._matcher.compute_bitmask(), dtype=np.uint8)
        allowed = np.unpackbits(bits, bitorder="little")[:size].astype(bool)
        if allowed.size < size:  # ids past llguidance's vocabulary: never allowed
            allowed = np.concatenate([allowed, np.zeros(size - allowed.size, dtype=bool)])
        return allowed


def grammar_for(
    vocabulary: Vocabulary,
    schema: dict[str, Any],
    cache: dict[str, str],
    warn: Callable[[str], None],
) -> GrammarFilter:
    """The filter for ``schema``, its llguidance grammar kept in ``cache`` by the schema's
    text (a tool loop asks for the same schema every turn); should llguidance refuse the
    grammar, plain JSON instead, with a warning, not a failed run."""
    import llguidance  # the embedded extra

    tokenizer = vocabulary.tokenizer()
    key = json.dumps(schema)  # not sorted: properties are written in the order given
    try:
        if key not in cache:
            lark = json_lark(schema)
            cache[key] = (
                llguidance.LLMatcher.grammar_from_lark(lark)
                if lark is not None
                else llguidance.LLMatcher.grammar_from_json_schema(_closed(schema), _JSON_OPTIONS)
            )
        return GrammarFilter(tokenizer, cache[key])
    except ValueError as exc:
        warn(f"Could not turn the reply schema into a grammar ({exc}); plain JSON instead.")
        cache[key] = llguidance.LLMatcher.grammar_from_json_schema(_ANY_OBJECT, _JSON_OPTIONS)
        return GrammarFilter(tokenizer, cache[key])
