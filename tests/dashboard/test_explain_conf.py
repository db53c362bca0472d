"""The dashboard's ``--scheduler-conf`` for its explain panels is a file, never YAML text."""

from __future__ import annotations

import pytest

from pumice.dashboard.server import _explain_conf
from pumice.scheduler.volcano import ConfigError


def test_a_scheduler_conf_that_is_no_regular_file_is_read_as_a_file_and_named() -> None:
    """Trial 12 F-6 j's cause: ``load_conf("/dev/null")`` parsed the words ``/dev/null`` as YAML
    (no regular file) and said ``<config>: expected a mapping ...``."""
    with pytest.raises(ConfigError) as e:
        _explain_conf("/dev/null")
    assert str(e.value).startswith("/dev/null: "), e.value
