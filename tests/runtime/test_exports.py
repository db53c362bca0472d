"""The public names of pumice.runtime and the client modules others code against exist and are
listed in ``__all__`` (httpx's test_exported_members, in spirit)."""

from __future__ import annotations

import importlib

import pytest

CONTRACT = {
    "pumice.runtime": [
        "Request", "Result", "TerminalError", "Reconciler", "Controller", "Manager", "Builder",
        "GenerationChangedPredicate", "LabelChangedPredicate", "AnnotationChangedPredicate",
        "set_controller_reference", "create_or_update", "add_finalizer", "remove_finalizer",
        "has_finalizer", "EventRecorder", "Expectations", "LeaderElectionLost",
    ],
    "pumice.client.informer": ["SharedInformerFactory", "Informer", "Store"],
    "pumice.client.workqueue": ["RateLimitingQueue", "QueueShutDown", "default_controller_rate_limiter"],
    "pumice.runtime.run": ["run_controller_manager"],
    "pumice.cli.controller_manager": ["command", "run_controller_manager"],
    "pumice.testing.fake_client": ["FakeClient", "CountingClient"],
}


@pytest.mark.parametrize("module_name", sorted(CONTRACT))
def test_contract_names_are_exported(module_name: str) -> None:
    module = importlib.import_module(module_name)
    exported = set(getattr(module, "__all__", ()))
    for name in CONTRACT[module_name]:
        assert hasattr(module, name), f"{module_name}.{name} is missing"
        assert name in exported, f"{module_name}.{name} is not in __all__"
    for name in exported:
        assert hasattr(module, name), f"{module_name}.__all__ lists {name} which does not exist"
