"""The run's ``delegate`` tool (``localhand.run.delegate``) as the session sets it up: where it
is offered, and each helper recorded in the store as a run of its own that names its parent
(``kind`` ``helper``; ``show`` and the dashboard print the link)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from localhand.events import EventBus
from localhand.run.delegate import Delegation

if TYPE_CHECKING:
    from localhand.config.settings import Settings
    from localhand.models.base import ChatModel
    from localhand.session.prepared import Prepared


def delegation_for(ready: Prepared, model: ChatModel) -> Delegation:
    """The run's delegate tool: none under the tiny model's policy, whose few tools are its
    own, nor with ``[run] delegate_share = 0``; each helper recorded where the run is."""
    share = delegate_share(ready.settings, model)

    def open_run(helper: str) -> tuple[EventBus, str | None]:
        bus, store = EventBus(), ready.store
        if store is None:
            return bus, None
        run_id = store.begin_run(helper, model=model.name, kind="helper")
        parent = store.open_run_for(ready.task.id)
        if parent is not None:
            from localhand.store.lineage import link_parent  # off the first request's path

            link_parent(store, run_id, parent)
        bus.subscribe(store.recorder(archive_bytes=0))  # the parent's run keeps the workspace
        return bus, run_id

    return Delegation(share, open_run)


def delegate_share(settings: Settings, model: ChatModel) -> float:
    """The share of the run's limits a helper gets; 0 (no ``delegate`` tool) under the tiny
    model's policy, whose few tools are its own. The warm-up asks it too: its tools must be
    the run's, byte for byte."""
    return 0.0 if model.tiny else settings.delegate_share
