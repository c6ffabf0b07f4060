"""llama-server's prompt cache kept where a run will need it (``benchmarks/kept_cache_bench.py``
measures what it saves): a run's slot saved when it ends (``keep``, ``--slot-save-path``, a
ring of ``saved_slots`` names) and restored into the slot of a run continuing it before it asks
(``restore``), so that other work in between costs no second prefill; and while an editor's
user types and while a batch's first wave copies its workspaces, the system prompt and tools a
run opens with sent to its slot (``warm_prefix``).
A failed save or restore is a warning, a failed warm-up says nothing."""

from __future__ import annotations

from contextlib import closing, nullcontext, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from localhand.config.settings import Settings
from localhand.models.base import declared
from localhand.profiles import profile_for
from localhand.prompt.opening import opening_messages
from localhand.prompt.tool_text import known_window, sized_definitions
from localhand.run.agent_config import AgentConfig
from localhand.run.delegate import Delegation
from localhand.session.backend import select_backend
from localhand.session.delegating import delegate_share
from localhand.skills import find_skills
from localhand.tools import default_tools

if TYPE_CHECKING:
    from localhand.models.base import ChatModel, PlainChatModel
    from localhand.models.openai_compat import OpenAICompatModel
    from localhand.session.prepared import Prepared
    from localhand.skills.shelf import Skills
    from localhand.tools.registry import ToolRegistry


def keep(ready: Prepared, model: ChatModel | PlainChatModel) -> None:
    """Save the slot of the run that ends under a ring name, which the store remembers."""
    store, size, declared_model = ready.store, ready.settings.saved_slots, declared(model)
    if store is None or size == 0 or declared_model.server_kind != "openai":
        return
    from localhand.store.lineage import next_slot_name, slot_saved  # off the first request's path

    saved = None
    try:
        if (run_id := store.open_run_for(ready.task.id)) is None:
            return
        name = next_slot_name(store, size)
        if (saved := declared_model.slot_file("save", name)) is not None and not saved.error:
            slot_saved(store, name, run_id)
    except Exception as exc:  # a store that fails here must not cost the run its Result
        ready.warn(f"this run's cache was not kept: {exc}")
    if saved is not None and saved.error and not saved.unsupported:
        ready.warn(f"this run's cache was not saved on the server ({saved.error})")


def restore(ready: Prepared, model: ChatModel) -> int | None:
    """Tokens restored from the continued run's slot (else the task's last: a batch's rerun)."""
    store, parent = ready.store, ready.continuing.parent if ready.continuing else None
    if store is None or ready.settings.saved_slots == 0 or model.server_kind != "openai":
        return None
    from localhand.store.lineage import saved_slot  # only for a server that may hold slots

    name = saved_slot(store, parent, ready.task.id)
    if name is None or (restored := model.slot_file("restore", name)) is None:
        return None
    if restored.error:
        ready.warn(f"the saved cache {name} was not restored ({restored.error}): it is read again")
    return None if restored.error else restored.tokens


def warm_prefix(settings: Settings, workspace: Path, model: ChatModel | None = None) -> None:
    """Send what a run in ``workspace`` opens with, up to its task, to ``model``'s slot (a
    batch task's, while its workspace is copied), or to the settings' server's on a backend of
    its own (an editor's new session, while its user types)."""
    own = model is None
    if own and settings.backend != "openai":  # Ollama, the embedded model: no slot to warm
        return
    with suppress(Exception):  # nothing warm: the run prefills as it would have
        model = select_backend(settings, _ignore) if model is None else model
        if declared(model).server_kind != "openai":  # a batch task's Ollama (own: openai's)
            return
        served = cast("OpenAICompatModel", declared(model))  # or a batch's, bound to one
        skills = find_skills(workspace, _ignore)
        helper = Delegation(delegate_share(settings, model))  # the run's share: runner's tools
        with (
            closing(served) if own else nullcontext(),
            run_tools(settings, workspace, skills, helper) as tools,
        ):
            definitions = sized_definitions(tools.definitions(), known_window(model))
            profile, config = served.profile or profile_for(model.name), AgentConfig()
            opening = opening_messages("", workspace, config, profile, definitions, model, _ignore)
            served.warm([opening[0], {"role": "user", "content": ""}], definitions)  # to the task


def run_tools(
    settings: Settings, workspace: Path, skills: Skills, delegation: Delegation, **gate: Any
) -> ToolRegistry:
    """The tools a run in ``workspace`` opens with (``gate``: its approval policy, approver,
    network, checkpoint): the loop's (``runner``) and the warm-up's alike, byte for byte, as
    the server's cached prefix needs."""
    extra = (*skills.tools(), *delegation.tools())
    return default_tools(workspace, *extra, max_jobs=settings.max_jobs, **gate)


def _ignore(message: str) -> None:
    """What the warm-up's parts would warn of: the run warns of it again, where it is seen."""
