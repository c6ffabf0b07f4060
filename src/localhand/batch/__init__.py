"""Many tasks at once: ``localhand batch TASKS.jsonl``.

    from localhand.batch import BatchOptions, run_batch
    report = run_batch("tasks.jsonl", load_settings(), BatchOptions(hosts=[url], slots=4))

- :mod:`~localhand.batch.tasks`: the JSONL file, one task per line (``load_batch``).
- :mod:`~localhand.batch.endpoints` and :mod:`~localhand.batch.pool`: the model servers, their
  slots, which one runs the next task (``EndpointPool``); :mod:`~localhand.batch.pooled`:
  the ChatModel that keeps a task on one of them and fails over (``PooledModel``).
- :mod:`~localhand.batch.workspace`: a fresh workspace per task (git worktree or copy).
- :mod:`~localhand.batch.state`: what is finished, for resume.
- :mod:`~localhand.batch.local` and :mod:`~localhand.batch.ray_executor`: the executors.
- :mod:`~localhand.batch.driver`: all of it together (``run_batch``).
"""

from typing import TYPE_CHECKING

from localhand._lazy import lazy_exports

if TYPE_CHECKING:
    from localhand.batch.driver import BatchOptions as BatchOptions
    from localhand.batch.driver import BatchReport as BatchReport
    from localhand.batch.driver import run_batch as run_batch
    from localhand.batch.endpoints import Endpoint as Endpoint
    from localhand.batch.endpoints import pool_endpoints as pool_endpoints
    from localhand.batch.endpoints import read_pool as read_pool
    from localhand.batch.pool import EndpointPool as EndpointPool
    from localhand.batch.pool import EndpointStatus as EndpointStatus
    from localhand.batch.pooled import PooledModel as PooledModel
    from localhand.batch.progress import Row as Row
    from localhand.batch.state import BatchState as BatchState
    from localhand.batch.tasks import BatchTask as BatchTask
    from localhand.batch.tasks import load_batch as load_batch

_LAZY = {
    "driver": "BatchOptions BatchReport run_batch",
    "endpoints": "Endpoint pool_endpoints read_pool",
    "pool": "EndpointPool EndpointStatus",
    "pooled": "PooledModel",
    "progress": "Row",
    "state": "BatchState",
    "tasks": "BatchTask load_batch",
}
"""Where each name lives, loaded on first use: importing one batch module (or the CLI) does
not load all of batch mode (the pool, Rich's progress bars, the executors)."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY)
