"""Shared pieces of the Volcano admission plugins: how a denial reads, and request matching.

A denial reads as the kube-apiserver prints a webhook's answer:
``admission webhook "validatejob.volcano.sh" denied the request: <upstream message>`` (HTTP 400).
"""

from __future__ import annotations

from typing import Any

from pumice.api import scheme
from pumice.api.admission import AdmissionError, AdmissionRequest, ObjectReader
from pumice.controllers.volcano import keys


def deny(webhook: str, message: str, code: int = 400) -> AdmissionError:
    """An AdmissionError worded like a kube-apiserver webhook denial."""
    return AdmissionError(f'admission webhook "{webhook}" denied the request: {message.strip()}', code=code)


def is_kind(req: AdmissionRequest, group: str, plural: str) -> bool:
    return req.kind.group == group and req.kind.plural == plural and req.subresource == ""


async def get_queue(reader: ObjectReader, name: str) -> dict[str, Any] | None:
    rk = reader.kind(keys.SCHEDULING_API_VERSION, "Queue") or scheme.QUEUE
    return await reader.get(rk, name)


async def list_queues(reader: ObjectReader) -> list[dict[str, Any]]:
    rk = reader.kind(keys.SCHEDULING_API_VERSION, "Queue") or scheme.QUEUE
    return await reader.list(rk)


def queue_state(queue: dict[str, Any]) -> str:
    return str((queue.get("status") or {}).get("state") or "")


def queue_parent(queue: dict[str, Any]) -> str:
    return str((queue.get("spec") or {}).get("parent") or "")


async def child_queues(reader: ObjectReader, parent: str) -> list[dict[str, Any]]:
    """Queues whose ``spec.parent`` is ``parent``, by name (the API server's reader answers from
    its index of Queues by ``spec.parent``, not a list of every Queue: the vcjob admission asks
    once per create)."""
    rk = reader.kind(keys.SCHEDULING_API_VERSION, "Queue") or scheme.QUEUE
    return sorted(await reader.list_by_field(rk, "spec.parent", parent), key=lambda q: q["metadata"]["name"])
