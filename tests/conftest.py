"""How `make test` spreads the suite over pytest-xdist workers (``-n 2 --dist loadgroup``).

Each test module runs whole on one worker (its module-scoped servers are set up once), and every
test that runs real Ray or real host processes runs on one worker, one after another: the
``ray``-marked tests and ``tests/node`` (Pods as processes, network namespaces, loop devices) share
the group ``host``, which is put first so that its long real-Ray runs start at once instead of
ending the run alone. Without xdist (a plain ``pytest``) nothing here changes anything.
"""

from __future__ import annotations

import pytest

HOST_GROUP = "host"
"""The xdist group of the tests that must not run beside each other (real Ray, host processes)."""


def _group(item: pytest.Item) -> str:
    """The xdist group of ``item``: ``host`` for real-Ray and node-agent tests, else its module."""
    if item.get_closest_marker("ray") is not None or item.nodeid.startswith("tests/node/"):
        return HOST_GROUP
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each item with its ``xdist_group`` and move the ``host`` group to the front.

    Runs only under xdist (``-n``): xdist's own hook (trylast) turns the marker into the scope its
    ``loadgroup`` scheduler keeps on one worker.
    """
    if not config.pluginmanager.hasplugin("xdist") or not getattr(config.option, "numprocesses", None):
        return
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))
    items.sort(key=lambda it: _group(it) != HOST_GROUP)  # stable: collection order within each part
