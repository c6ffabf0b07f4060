"""A run's prompt cache kept past its end, on a llama-server started with ``--slot-save-path``.

A continued run (``--continue``, an editor's follow-up) sends the earlier conversation again,
unchanged, so the server reuses it from the slot's cache: unless other work took that slot in
between, and then the whole conversation is prefilled again, the longest wait a local user
has. So when a run ends its slot is saved on the server's disk (``keep``), and before the
first request of a run that continues it the file is read back into the slot the new run
holds (``restore``). The server cannot list or delete those files: they are a ring of
``saved_slots`` names, the oldest overwritten (``localhand.store.saved_slots``). Everything
here is best effort: a server without ``--slot-save-path`` is left alone (``localhand
doctor`` says so), and a restore that fails is a warning.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from localhand.models.base import declared

if TYPE_CHECKING:
    from localhand.models.base import ChatModel, PlainChatModel
    from localhand.run.lifecycle import Outcome
    from localhand.session.prepared import Prepared
    from localhand.types import Result


def keep(ready: Prepared, model: ChatModel | PlainChatModel) -> None:
    """Save the slot of the run that ends (its conversation was kept) under a ring name."""
    store, size = ready.store, ready.settings.saved_slots
    run_id = store.open_run_for(ready.task.id) if store is not None and size > 0 else None
    if store is None or run_id is None:
        return
    from localhand.store.saved_slots import claim_name, forget  # off the first request's path

    try:
        name = claim_name(store, run_id, size)
        saved = declared(model).slot_file("save", name)
        if saved is None or saved.error is not None:
            forget(store, name)
    except Exception as exc:  # a store that fails here must not cost the run its Result
        ready.warn(f"this run's cache was not kept: {exc}")
        return
    if saved is not None and saved.error is not None and not saved.unsupported:
        ready.warn(f"this run's cache was not saved on the server ({saved.error})")


def restore(ready: Prepared, model: ChatModel) -> int | None:
    """Before a continued run's first request: the earlier run's saved slot read back into
    the slot this run holds; the tokens restored, or None (a warning says why, if it failed)."""
    store, parent = ready.store, ready.continuing.parent if ready.continuing else None
    if store is None or parent is None or ready.settings.saved_slots == 0:
        return None
    from localhand.store.saved_slots import name_of  # off the first request's path

    name = name_of(store, parent)
    restored = model.slot_file("restore", name) if name is not None else None
    if restored is None:
        return None
    if restored.error is not None:
        ready.warn(
            f"the cache run {parent} left could not be restored ({restored.error}): its "
            "conversation is processed again"
        )
        return None
    return restored.tokens


def noting_restored(outcome: Outcome[Result], tokens: int | None) -> Outcome[Result]:
    """``outcome``, whose Result says how many tokens were restored (``Prefill``)."""
    if tokens is None:
        return outcome
    settle = outcome.settle

    def settled(checks: list[Any]) -> Result:
        result = settle(checks)
        result.prefill.restored_tokens = tokens
        return result

    return replace(outcome, settle=settled)
