"""pumice.scheduler.volcano.agent: Volcano 1.14's Agent Scheduler for latency-sensitive single
Pods beside the batch scheduler (per-Pod scheduling queue, workers, conflict-aware binder).

See :mod:`.core` (view, workers, binder) and :mod:`.live`; the queue is the default scheduler's
(:mod:`pumice.scheduler.default.queue`) with an urgent requeue.

Mirrors: volcano pkg/agentscheduler, cmd/agent-scheduler.
"""
