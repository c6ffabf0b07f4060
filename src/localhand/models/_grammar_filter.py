"""Grammar-constrained sampling that stays fast on large vocabularies, for the embedded backend.

llama-cpp-python puts the grammar sampler in front of top-k, so every token checks the whole
vocabulary against the grammar: 262,144 tokens for Gemma 3, which more than doubles the time
of each token on a CPU. llama.cpp's own server avoids that by checking only the likely tokens
first; this does the same, as a logits processor:

1. take the ``top`` highest-scoring tokens and ask the grammar which of them may come next;
2. only if none may, ask about the whole vocabulary (rare: the model mostly wants valid JSON);
3. every other token gets ``-inf``, and llama-cpp-python's usual samplers (penalties, top-k,
   temperature) choose among the allowed ones.

The tokens the model actually took are fed to the grammar at the start of the next call, read
from the ids the processor is given. Pass ``grammar=None`` to llama-cpp-python alongside it.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Callable
from typing import Any

import numpy as np
from llama_cpp import llama_cpp as C  # the C API

from localhand.models._grammar_json import json_gbnf

_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class GrammarFilter:
    """A llama-cpp-python logits processor enforcing a GBNF grammar. Single use: one per reply;
    ``close()`` frees the grammar."""

    def __init__(self, llm: Any, gbnf: str, *, top: int = 64) -> None:
        self._sampler = C.llama_sampler_init_grammar(llm._model.vocab, gbnf.encode(), b"root")
        if not self._sampler:
            raise ValueError("llama.cpp could not parse the grammar")
        self.top = top
        self._seen: int | None = None

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self._seen is None:  # the first call: everything so far is prompt
            self._seen = len(input_ids)
        for token in input_ids[self._seen :]:
            C.llama_sampler_accept(self._sampler, int(token))
        self._seen = len(input_ids)
        likely = np.argpartition(scores, -self.top)[-self.top :]
        allowed = self._allowed(likely, scores)
        if allowed.size == 0:
            allowed = self._allowed(np.arange(scores.size, dtype=np.intc), scores)
        out = np.full_like(scores, -np.inf)
        out[allowed] = scores[allowed]
        return out

    def _allowed(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        data = np.zeros(len(ids), dtype=_TOKEN_DATA)
        data["id"] = ids
        data["logit"] = scores[ids]
        array = C.llama_token_data_array(
            data=data.ctypes.data_as(C.llama_token_data_p),
            size=len(ids),
            selected=-1,
            sorted=False,
        )
        C.llama_sampler_apply(self._sampler, ctypes.byref(array))
        return data["id"][np.isfinite(data["logit"])]

    def close(self) -> None:
        if self._sampler:
            C.llama_sampler_free(self._sampler)
            self._sampler = None


def schema_gbnf(schema: dict[str, Any], cache: dict[str, str], warn: Callable[[str], None]) -> str:
    """The GBNF grammar of a JSON schema, kept in ``cache`` by the schema's text (converting
    takes milliseconds, and a tool loop asks for the same schema every turn)."""
    from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf

    # Not sorted: the converter writes properties in the order it reads them, and a call's
    # name should come before its arguments, as the tools' own order of arguments should.
    key = json.dumps(schema)
    if key not in cache:
        try:
            cache[key] = json_gbnf(schema) or json_schema_to_gbnf(key)
        except Exception as exc:  # a schema feature the converter lacks: any JSON then
            warn(
                f"Could not turn the reply schema into a grammar ({exc}); constraining "
                "replies to plain JSON instead."
            )
            cache[key] = JSON_GBNF
    return cache[key]


def grammar_for(
    llm: Any, schema: dict[str, Any], cache: dict[str, str], warn: Callable[[str], None]
) -> GrammarFilter:
    """The filter for ``schema``; should llama.cpp refuse its grammar (its limits on size and
    repetition are not documented), plain JSON instead, with a warning, not a failed run."""
    from llama_cpp.llama_grammar import JSON_GBNF

    try:
        return GrammarFilter(llm, schema_gbnf(schema, cache, warn))
    except ValueError:
        warn("llama.cpp could not parse the reply's grammar; constraining it to plain JSON.")
        return GrammarFilter(llm, JSON_GBNF)
