"""A fruit market Serve application with the deployment names of KubeRay's ray-service.sample.yaml
(``fruit.deployment_graph``): POST ``["MANGO", 2]`` to ``/fruit`` answers price × amount, each
stand's price coming from its ``user_config``. Written for pumice's tests; mounted into the Ray Pods
from a ConfigMap."""

from __future__ import annotations

from typing import Any

from ray import serve


class _Stand:
    def __init__(self) -> None:
        self.price = 0

    def reconfigure(self, config: dict[str, Any]) -> None:
        self.price = int(config.get("price", 0))

    def check_price(self, amount: int) -> int:
        return self.price * int(amount)


@serve.deployment
class MangoStand(_Stand):
    pass


@serve.deployment
class OrangeStand(_Stand):
    pass


@serve.deployment
class PearStand(_Stand):
    pass


@serve.deployment
class FruitMarket:
    def __init__(self, mango: Any, orange: Any, pear: Any) -> None:
        self.stands = {"MANGO": mango, "ORANGE": orange, "PEAR": pear}

    async def __call__(self, request: Any) -> int:
        fruit, amount = await request.json()
        stand = self.stands.get(str(fruit).upper())
        if stand is None:
            return -1
        return int(await stand.check_price.remote(amount))


deployment_graph = FruitMarket.bind(MangoStand.bind(), OrangeStand.bind(), PearStand.bind())
