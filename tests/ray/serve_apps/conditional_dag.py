"""A calculator Serve application with the deployment names of KubeRay's ray-service.sample.yaml
(``conditional_dag.serve_dag``): POST ``["ADD", 3]`` or ``["MUL", 3]`` to ``/calc``; the increment
and the factor come from ``user_config``. Written for pumice's tests."""

from __future__ import annotations

from typing import Any

from ray import serve


@serve.deployment
class Adder:
    def __init__(self) -> None:
        self.increment = 0

    def reconfigure(self, config: dict[str, Any]) -> None:
        self.increment = int(config.get("increment", 0))

    def add(self, x: int) -> int:
        return int(x) + self.increment


@serve.deployment
class Multiplier:
    def __init__(self) -> None:
        self.factor = 1

    def reconfigure(self, config: dict[str, Any]) -> None:
        self.factor = int(config.get("factor", 1))

    def multiply(self, x: int) -> int:
        return int(x) * self.factor


@serve.deployment
class Router:
    def __init__(self, adder: Any, multiplier: Any) -> None:
        self.adder = adder
        self.multiplier = multiplier

    async def __call__(self, request: Any) -> int:
        op, x = await request.json()
        if str(op).upper() == "ADD":
            return int(await self.adder.add.remote(x))
        return int(await self.multiplier.multiply.remote(x))


serve_dag = Router.bind(Adder.bind(), Multiplier.bind())
