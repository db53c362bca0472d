"""Shared concepts are defined once: the wire-object alias in ``pumice.api``, every kind in
``pumice.api.scheme`` (others build ResourceKinds only from discovery or CRDs, never from literals)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for d in ("pumice", "tests", "bench") for p in (ROOT / d).rglob("*.py"))


def _offenders(pattern: str, allowed: set[str], under: tuple[str, ...] = ("pumice", "tests", "bench")) -> list[str]:
    rx = re.compile(pattern, re.M)
    return [f"{p.relative_to(ROOT)}:{p.read_text().count(chr(10), 0, m.start()) + 1}"
            for p in SOURCES if p.relative_to(ROOT).as_posix() not in allowed
            and p.relative_to(ROOT).parts[0] in under
            for m in rx.finditer(p.read_text())]


def test_obj_is_defined_only_in_pumice_api() -> None:
    assert _offenders(r"^Obj = dict\[str, Any\]", {"pumice/api/__init__.py"}) == [], \
        "use `from pumice.api import Obj`"


def test_kinds_are_declared_only_in_the_scheme() -> None:
    # (tests may build toy kinds)
    assert _offenders(r'\bResourceKind\(\s*"', {"pumice/api/scheme.py"}, ("pumice",)) == [], \
        "declare the kind in pumice/api/scheme.py and import it"
