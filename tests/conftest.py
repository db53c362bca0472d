"""Test-run wiring for `make test` under pytest-xdist: the real-Ray modules run on one worker.

`make test` runs two xdist workers with ``--dist loadgroup``. Every test is its own work unit,
handed to the next free worker, except the tests of a module that uses real Ray (one that names
``pytest.mark.ray``): those modules form one unit, so one worker runs them one after another
while the other worker runs everything else. Two real Ray clusters starting at once on CI's two
cores starve Ray's own dashboard and job processes (seen in CI: a SidecarMode ``ray job submit``
exiting early, an HTTPMode job reported missing right after it was accepted and submitted again),
which are timing failures of the machine, not of pumice.

xdist's own ``xdist_group`` marker cannot express this under pytest 9: pytest-xdist 3.8 writes the
group into ``item._nodeid``, which pytest 9 no longer reads when it builds ``nodeid``. The
controller process sees only nodeids, so the grouping here is by module path, decided from the
module's text.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest

REAL_RAY_UNIT = "real-ray"
_RAY_MARK = re.compile(r"\bpytest\.mark\.ray\b")


@functools.cache
def _uses_real_ray(module: Path) -> bool:
    """True when the test module at ``module`` names the ``ray`` marker (module or test level)."""
    try:
        return bool(_RAY_MARK.search(module.read_text(encoding="utf-8")))
    except OSError:
        return False


def scope_of(nodeid: str, rootpath: Path) -> str:
    """The xdist work unit of ``nodeid``: :data:`REAL_RAY_UNIT` for a test of a real-Ray module,
    the ``@group`` suffix where one is present (loadgroup's own rule), else the nodeid itself."""
    if nodeid.rfind("@") > nodeid.rfind("]"):  # not an "@" inside a parameter id (xdist's test)
        return nodeid.rsplit("@", 1)[-1]
    if _uses_real_ray(rootpath / nodeid.split("::", 1)[0]):
        return REAL_RAY_UNIT
    return nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: xdist's scope scheduler with :func:`scope_of` as the unit rule (the
    largest unit, the real-Ray one, goes out first). Other modes: xdist's own scheduler."""
    if config.getoption("dist", None) != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class RealRayOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid, config.rootpath)

    return RealRayOnOneWorker(config, log)
