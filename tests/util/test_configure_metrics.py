"""Review 18 R-11: prometheus_client's created series were turned off as a side effect of
importing pumice._util.metrics (any program importing it lost its ``_created`` series); now a
server turns them off where it sets up its ``/metrics`` (configure_metrics)."""

from __future__ import annotations

import os
import subprocess
import sys

_PROBE = """
from prometheus_client import metrics
import pumice._util.metrics
print(metrics._use_created)
from pumice.runtime.health import build_app
build_app({}, {}, metrics=False)
print(metrics._use_created)
build_app({}, {}, metrics=True)
print(metrics._use_created)
"""


def test_created_series_are_turned_off_by_a_metrics_server_not_by_an_import() -> None:
    # a fresh interpreter: the switch is process-wide, and this one's servers may have set it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("PROMETHEUS_DISABLE_CREATED_SERIES", None)
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["True", "True", "False"], out.stderr
