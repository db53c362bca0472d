"""Shared harness: every upstream-ported case runs in-process (twice, vectorized and plain loop,
for determinism and equivalence) and through ``pumice volcano session`` (click CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from pumice.cli.volcano import command
from pumice.testing.volcano import Case, check_case, conf_yaml, run_case, write_manifests


def run_both(case: Case, tmp_path: Path) -> None:
    first = run_case(case)
    check_case(case, first)
    again = run_case(case)
    assert (again["binds"], again["evictions"]) == (first["binds"], first["evictions"]), "not deterministic"
    plain = run_case(case, vectorize=False)
    assert (plain["binds"], plain["evictions"], plain["pipelined"]) == (
        first["binds"],
        first["evictions"],
        first["pipelined"],
    ), "vectorized and plain-loop paths disagree"
    d = tmp_path / "manifests"
    write_manifests(d, case.objects)
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(conf_yaml(case.actions, case.tiers, case.configurations))
    res = CliRunner().invoke(command, ["session", "-f", str(d), "--config", str(conf)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    check_case(case, out)
    assert out["binds"] == first["binds"] and sorted(out["evictions"]) == sorted(first["evictions"])


def upstream_params(origin: str, cases: list[Case]) -> list:
    """``pytest.param`` per case, each marked ``upstream("<origin>: <case name>")``."""
    import pytest

    return [pytest.param(c, marks=pytest.mark.upstream(f"{origin}: {c.name}"), id=c.name) for c in cases]
