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
    from localhand.batch.driver import BatchOptions, BatchReport, run_batch
    from localhand.batch.endpoints import Endpoint, pool_endpoints, read_pool
    from localhand.batch.pool import EndpointPool, EndpointStatus
    from localhand.batch.pooled import PooledModel
    from localhand.batch.progress import Row
    from localhand.batch.state import BatchState
    from localhand.batch.tasks import BatchTask, load_batch

_LAZY = {
    "BatchOptions": "driver",
    "BatchReport": "driver",
    "run_batch": "driver",
    "Endpoint": "endpoints",
    "pool_endpoints": "endpoints",
    "read_pool": "endpoints",
    "EndpointPool": "pool",
    "EndpointStatus": "pool",
    "PooledModel": "pooled",
    "Row": "progress",
    "BatchState": "state",
    "BatchTask": "tasks",
    "load_batch": "tasks",
}
"""Where each name lives, loaded on first use: importing one batch module (or the CLI) does
not load all of batch mode (the pool, Rich's progress bars, the executors)."""

__all__ = [
    "BatchOptions",
    "BatchReport",
    "BatchState",
    "BatchTask",
    "Endpoint",
    "EndpointPool",
    "EndpointStatus",
    "PooledModel",
    "Row",
    "load_batch",
    "pool_endpoints",
    "read_pool",
    "run_batch",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
