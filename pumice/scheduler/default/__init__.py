"""pumice.scheduler.default: a kube-scheduler subset (filter, score, bind) for Pods whose
``spec.schedulerName`` is empty or ``default-scheduler``.

Entry points: :func:`run_scheduler` (``async``, until a stop event) and :class:`DefaultScheduler`
(in-process, ``start``/``stop``); the pure cores :class:`VectorCore` (numpy) and :class:`LoopCore`
(plain loops, the benchmark baseline) in :mod:`.core` and :mod:`.vector`.
"""

from pumice.scheduler.default.core import Decision, LoopCore
from pumice.scheduler.default.scheduler import DEFAULT_SCHEDULER_NAME, DefaultScheduler, run_scheduler
from pumice.scheduler.default.vector import VectorCore

__all__ = ["DEFAULT_SCHEDULER_NAME", "Decision", "DefaultScheduler", "LoopCore", "VectorCore", "run_scheduler"]
