"""Scheme.serves_group: the served-group answer the API server checks on every /apis request
follows every add and remove (a kind added twice, one version of two removed, the last removed)."""
from __future__ import annotations

from dataclasses import replace

from pumice.api.scheme import VCJOB, Scheme


def test_serves_group_follows_adds_and_removes() -> None:
    s = Scheme.builtin()
    assert s.serves_group("") and s.serves_group("apps")
    assert not s.serves_group("batch.volcano.sh")
    v2 = replace(VCJOB, version="v1beta1")
    s.add(VCJOB)
    s.add(VCJOB)  # the same kind again (a CRD updated): still one kind of the group
    s.add(v2)
    assert s.serves_group("batch.volcano.sh")
    s.remove("batch.volcano.sh", "v1alpha1", "jobs")
    assert s.serves_group("batch.volcano.sh")  # v1beta1 still served
    s.remove("batch.volcano.sh", "v1alpha1", "jobs")  # removing what is gone changes nothing
    assert s.serves_group("batch.volcano.sh")
    s.remove("batch.volcano.sh", "v1beta1", "jobs")
    assert not s.serves_group("batch.volcano.sh")
    assert [gv for gv in s.group_versions() if gv[0] == "batch.volcano.sh"] == []
    s.add(VCJOB)
    assert s.serves_group("batch.volcano.sh")
