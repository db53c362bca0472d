"""A watch's resourceVersion that is not a uint64 is 400 (trial 11 F-11 e: ``-5`` answered 410
and ``18446744073709551616`` 504); both are strconv.ParseUint errors upstream."""

from __future__ import annotations

import httpx2
import pytest


@pytest.mark.parametrize("rv", ["-5", "18446744073709551616"])
@pytest.mark.parametrize("watch", ["true", "false"])
async def test_an_unparsable_resource_version_is_400(http: httpx2.AsyncClient, rv: str, watch: str) -> None:
    r = await http.get(f"/api/v1/namespaces/default/configmaps?watch={watch}&resourceVersion={rv}")
    assert r.status_code == 400, r.text
    assert r.json()["reason"] == "BadRequest"
    assert f'resourceVersion: Invalid value: "{rv}": strconv.ParseUint: parsing "{rv}": ' in r.json()["message"]
