"""A real OpenAI-compatible backend over HTTP to the fake server, scripted to read ``a.txt``
and answer: what the tests of the tools a model can see (``tool_text``, the ``/apply-template``
probe) run a task on.

PYTEST_DONT_REWRITE: a helper module; it asserts nothing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from localhand import Agent
from localhand.models.openai_compat import OpenAICompatModel
from localhand.testing.fake_ollama import FakeOllama

READ = {"tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "a.txt"}}}]}
ANSWER = {"content": "It says hello."}


@contextmanager
def served(
    name: str, *, renders: bool | None = None, **settings: Any
) -> Iterator[tuple[FakeOllama, OpenAICompatModel]]:
    """The backend for ``name`` and its fake server; ``renders``: what the server's
    ``/apply-template`` says of the tools (``None``: it has no such endpoint)."""
    with FakeOllama([READ, ANSWER], models={name: {}}, template_renders_tools=renders) as fake:
        model = OpenAICompatModel(name, fake.url, backoff=0.0, **settings)
        try:
            yield fake, model
        finally:
            model.close()


def read_a_file(tmp_path: Path, model: Any) -> Any:
    """Run the scripted task in ``tmp_path`` on ``model``: its Result."""
    (tmp_path / "a.txt").write_text("hello\n")
    return Agent(model, tmp_path).run("Say what a.txt holds")
