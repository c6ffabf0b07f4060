"""A run's prompt cache kept past its end on llama-server (``--slot-save-path``), so that a
run continuing it (``--continue``, an editor's follow-up) need not prefill the conversation
again after other work took the slot: saved when the run ends (``keep``) under a ring of
``saved_slots`` names, restored into the continuing run's slot before it asks (``restore``).
Best effort: a server without the flag is left alone, a failure is a warning."""

from __future__ import annotations

from typing import TYPE_CHECKING

from localhand.models.base import declared

if TYPE_CHECKING:
    from localhand.models.base import ChatModel, PlainChatModel
    from localhand.session.prepared import Prepared


def keep(ready: Prepared, model: ChatModel | PlainChatModel) -> None:
    """Save the slot of the run that ends under a ring name, which the store remembers."""
    store, size = ready.store, ready.settings.saved_slots
    run_id = store.open_run_for(ready.task.id) if store is not None and size > 0 else None
    if store is None or run_id is None:
        return
    from localhand.store.lineage import next_slot_name, slot_saved  # off the first request's path

    try:
        name = next_slot_name(store, size)
        if (saved := declared(model).slot_file("save", name)) is not None and not saved.error:
            slot_saved(store, name, run_id)
    except Exception as exc:  # a store that fails here must not cost the run its Result
        saved = None
        ready.warn(f"this run's cache was not kept: {exc}")
    if saved is not None and saved.error and not saved.unsupported:
        ready.warn(f"this run's cache was not saved on the server ({saved.error})")


def restore(ready: Prepared, model: ChatModel) -> int | None:
    """The tokens of the continued run's saved slot restored into this run's, or None."""
    store, parent = ready.store, ready.continuing.parent if ready.continuing else None
    if store is None or parent is None or ready.settings.saved_slots == 0:
        return None
    from localhand.store.lineage import saved_slot  # off the first request's path

    name = saved_slot(store, parent)
    if name is None or (restored := model.slot_file("restore", name)) is None:
        return None
    if restored.error:
        ready.warn(
            f"the cache of run {parent} was not restored ({restored.error}): it is read again"
        )
    return None if restored.error else restored.tokens
