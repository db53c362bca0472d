"""The vcjob (``batch.volcano.sh/v1alpha1`` Job) controller: pure builders, the phase table,
job plugins, and the reconciler.

Mirrors: volcano pkg/controllers/job.
"""
