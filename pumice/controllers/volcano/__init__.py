"""Volcano around the scheduler: admission plugins and the queue, podgroup and vcjob controllers.

Entry points:

- :func:`admission_plugins` -> ``(mutating, validating)`` lists for the API server's chain.
- :func:`setup` registers the controllers on a :class:`pumice.runtime.Manager`.

Mirrors: volcano pkg/webhooks/admission and pkg/controllers/{queue,podgroup,job}.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pumice.api.admission import MutatingPlugin, ValidatingPlugin

if TYPE_CHECKING:
    from pumice.controllers.volcano.admission.pods import ResourceGroup


def admission_plugins(
    *,
    scheduler_name: str = "volcano",
    resource_groups: list[ResourceGroup] | None = None,
) -> tuple[list[MutatingPlugin], list[ValidatingPlugin]]:
    """The Volcano admission plugins, in upstream webhook order.

    Args:
        scheduler_name: the scheduler name jobs default to and Pod validation applies to.
        resource_groups: ``volcano-admission.conf`` resource groups for the Pod mutator (none by
            default, as shipped upstream).
    Returns:
        ``(mutating, validating)``: mutating jobs/queues/podgroups/pods, then validating
        jobs (webhook, then the basic job-validation-policy), queues, podgroups, hypernodes,
        cronjobs, jobflows, pods.
    """
    from pumice.controllers.volcano import admission as adm

    mutating: list[MutatingPlugin] = [
        adm.JobMutator(scheduler_name),
        adm.QueueMutator(),
        adm.PodGroupMutator(),
        adm.PodMutator(resource_groups),
    ]
    validating: list[ValidatingPlugin] = [
        adm.JobValidator(),
        adm.JobPolicyValidator(),
        adm.QueueValidator(),
        adm.PodGroupValidator(),
        adm.HyperNodeValidator(),
        adm.CronJobValidator(),
        adm.JobFlowValidator(),
        adm.PodValidator((scheduler_name,)),
    ]
    return mutating, validating


def setup(mgr: Any, **options: Any) -> None:
    """Register the queue, podgroup and vcjob controllers on ``mgr``.

    Options: ``scheduler_names`` (tuple, default ``("volcano",)``), ``create_default_queue``
    (default True), ``workers`` (concurrent job/podgroup reconciles, default 4).
    """
    from pumice.controllers.volcano.wiring import setup_controllers

    setup_controllers(mgr, **options)
