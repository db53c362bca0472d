"""A Secret's data values are base64 ([]byte in JSON): kube-apiserver refuses one that is not
(found by the new-user trial: pumice stored it)."""

from __future__ import annotations

import pytest

from pumice.client.base import ApiError
from pumice.testing.cluster import local_cluster


async def test_a_secret_whose_data_is_not_base64_is_refused_without_echoing_it() -> None:
    async with local_cluster(install_crds=False) as c:
        with pytest.raises(ApiError) as e:
            await c.client.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"},
                                   "data": {"k": "!!notbase64", "ok": "aGk="}})
        # kube-apiserver's JSON decoding of the []byte value fails: 400 with the decoder's message
        assert e.value.code == 400 and e.value.message == (
            'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 0')
        assert "notbase64" not in str(e.value)
