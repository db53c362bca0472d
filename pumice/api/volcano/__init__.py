"""Volcano wire types and constants (Queue, PodGroup, batch Job, bus Command).

``from pumice.api.volcano import constants as vc`` for the wire strings;
``from pumice.api.volcano.types import PodGroup, Queue, Job, Command`` for the typed models.
"""

from pumice.api.volcano.constants import JobPhase, PodGroupPhase, QueueState
from pumice.api.volcano.types import Command, Job, PodGroup, Queue, from_wire, to_wire

__all__ = ["Command", "Job", "JobPhase", "PodGroup", "PodGroupPhase", "Queue", "QueueState", "from_wire", "to_wire"]
