"""The controller groups ``pumice controller-manager`` and ``pumice up`` run, wired to their
``setup`` functions (cli is the layer that may import every controller package).

==========  ==============================================================
``kube``    :func:`pumice.controllers.kube.setup`
``ray``     :func:`pumice.controllers.ray.setup` (with ``batch_scheduler``)
``volcano`` :func:`pumice.controllers.volcano.setup`
==========  ==============================================================
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pumice.runtime.run import SetupFn

CONTROLLER_GROUPS: tuple[str, ...] = ("kube", "ray", "volcano")


def controller_setups(names: list[str], *, batch_scheduler: str | None = None,
                      ray_options: Mapping[str, Any] | None = None,
                      root_ca: str | None = None) -> list[SetupFn]:
    """The setup callables of the groups ``names``, in that order.

    Args:
        names: group names from :data:`CONTROLLER_GROUPS`.
        batch_scheduler: KubeRay's batch scheduler (``"volcano"``; None, ``""`` or ``"none"``: none).
        ray_options: more keyword arguments of the KubeRay ``setup`` (``pumice up --runtime
            simulated`` passes the simulated dashboard's ``dashboard_client_factory`` and
            ``serve_proxy_healthy``).
        root_ca: the API server's CA (PEM) the kube controllers publish as ``kube-root-ca.crt``.

    Raises:
        ValueError: an unknown group name (the message lists the known ones).
    """
    unknown = [n for n in names if n not in CONTROLLER_GROUPS]
    if unknown:
        raise ValueError(f"unknown controllers {unknown}; known: {list(CONTROLLER_GROUPS)}")
    from pumice.controllers import kube, ray, volcano

    table: dict[str, SetupFn] = {
        "kube": functools.partial(kube.setup, root_ca=root_ca),
        "ray": functools.partial(ray.setup, batch_scheduler=None if batch_scheduler in (None, "", "none")
                                 else batch_scheduler, **dict(ray_options or {})),
        "volcano": volcano.setup,
    }
    return [table[n] for n in names]
