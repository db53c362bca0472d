"""One Event store behind core/v1 and events.k8s.io/v1, as kube-apiserver has it.

Both APIs serve the objects stored under the core ``events`` resource; an events.k8s.io/v1 Event
is converted to the core/v1 form when written and back when read, field selectors included.

Field mapping (events.k8s.io/v1 -> core/v1): ``regarding`` -> ``involvedObject``, ``note`` ->
``message``, ``reportingController`` -> ``reportingComponent``, ``deprecatedSource`` ->
``source``, ``deprecatedFirstTimestamp`` -> ``firstTimestamp``, ``deprecatedLastTimestamp`` ->
``lastTimestamp``, ``deprecatedCount`` -> ``count``; ``metadata``, ``eventTime``, ``series``,
``related``, ``action``, ``reason``, ``type`` and ``reportingInstance`` are the same.

Mirrors: kubernetes pkg/apis/events/v1/conversion.go (Convert_v1_Event_To_core_Event,
Convert_core_Event_To_v1_Event), pkg/registry/core/event (the one storage).
"""

from __future__ import annotations

import dataclasses

from pumice.api import Obj, protobuf
from pumice.api.selectors import FieldSelector

__all__ = ["CORE_MESSAGE", "CORE_RESOURCE", "EVENTS_V1_MESSAGE", "EVENTS_V1_RESOURCE", "core_field_selector", "to_core",
           "to_events_v1"]


#: the store resource both Event APIs read and write
CORE_RESOURCE = "/events"
#: the protobuf messages of the two forms (what Go writes for them: pumice.api.protobuf.go_zero)
CORE_MESSAGE = "k8s.io.api.core.v1.Event"
EVENTS_V1_MESSAGE = "k8s.io.api.events.v1.Event"
#: where pumice before this change kept events.k8s.io Events (migrated at start)
EVENTS_V1_RESOURCE = "events.k8s.io/events"

_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_TO_V1 = {v: k for k, v in _TO_CORE.items()}


def to_core(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event in the core/v1 form (a new dict; values are shared), with the
    top-level fields Go always writes for a core/v1 Event."""
    return protobuf.fill_go_zero(_renamed(obj, "v1", _TO_CORE), CORE_MESSAGE)


def to_events_v1(obj: Obj) -> Obj:
    """A core/v1 Event in the events.k8s.io/v1 form (a new dict; values are shared), as Go
    writes it: its always-written fields present (``eventTime: null``...), its empty
    ``omitempty`` strings (``reportingController: ""``) left out."""
    return protobuf.fill_go_zero(_renamed(obj, "events.k8s.io/v1", _TO_V1), EVENTS_V1_MESSAGE, drop_empty=True)


def _renamed(obj: Obj, api_version: str, names: dict[str, str]) -> Obj:
    out: Obj = {"apiVersion": api_version, "kind": "Event"}
    for k, v in obj.items():
        if k not in ("apiVersion", "kind"):
            out[names.get(k, k)] = v
    return out


def _core_path(path: str) -> str:
    head, dot, rest = path.partition(".")
    return _TO_CORE.get(head, head) + dot + rest


def core_field_selector(fs: FieldSelector) -> FieldSelector:
    """An events.k8s.io/v1 field selector (``regarding.name=x``) over the core/v1 form."""
    return FieldSelector(tuple(dataclasses.replace(r, path=_core_path(r.path)) for r in fs.requirements))
