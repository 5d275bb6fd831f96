"""What a local Dask cluster's workers start with, imported by the fork server they are forked from and by nothing
else: every worker it forks, one the nanny restarts too, has it from its first instant.

The record of a task that raised (its key, state, exception and a traceback, on ~7 lines) is left out of the worker's
log: the command says the failure itself, once, on one line (`goodput-report` reads the log again here for its
error; a sweep reports the run lost)."""

from __future__ import annotations

import logging
from typing import Any

WORKER_LOG = "distributed.worker"


def not_a_task_failure(record: Any) -> bool:
    """A log filter dropping the worker's record of a failed task."""
    return not str(record.msg).startswith("Compute Failed")


logging.getLogger(WORKER_LOG).addFilter(not_a_task_failure)
