"""Volcano admission plugins (the vc-webhook-manager webhooks, as in-process plugins).

Mirrors: volcano pkg/webhooks/admission.
"""

from __future__ import annotations

from pumice.controllers.volcano.admission.cronjobs import CronJobValidator
from pumice.controllers.volcano.admission.hypernodes import HyperNodeValidator
from pumice.controllers.volcano.admission.jobflows import JobFlowValidator
from pumice.controllers.volcano.admission.jobs import JobMutator, JobPolicyValidator, JobValidator
from pumice.controllers.volcano.admission.podgroups import PodGroupMutator, PodGroupValidator
from pumice.controllers.volcano.admission.pods import (
    PodMutator,
    PodValidator,
    ResourceGroup,
    load_admission_conf,
)
from pumice.controllers.volcano.admission.queues import QueueMutator, QueueValidator

__all__ = [
    "CronJobValidator",
    "HyperNodeValidator",
    "JobFlowValidator",
    "JobMutator",
    "JobPolicyValidator",
    "JobValidator",
    "PodGroupMutator",
    "PodGroupValidator",
    "PodMutator",
    "PodValidator",
    "QueueMutator",
    "QueueValidator",
    "ResourceGroup",
    "load_admission_conf",
]
