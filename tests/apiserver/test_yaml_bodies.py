"""YAML request bodies decode as kube-apiserver decodes them (sigs.k8s.io/yaml: go-yaml v2 into
interface{}, then JSON), so a YAML value JSON cannot carry never reaches the server as such (trial
11 F-1: an unquoted date, ``!!binary``, ``!!set`` or a non-string key made the API answer 500)."""

from __future__ import annotations

import httpx2
import pytest
import yaml

from pumice.api import yamlsafe

CMS = "/api/v1/namespaces/default/configmaps"
YAML = {"Content-Type": "application/yaml"}
APPLY = {"Content-Type": "application/apply-patch+yaml"}


@pytest.mark.parametrize(("data_yaml", "stored"), [
    ("c: 2020-01-01", {"c": "2020-01-01"}),
    ("c: 2001-12-14t21:59:43.10-05:00", {"c": "2001-12-14t21:59:43.10-05:00"}),
    ("c: !!binary aGVsbG8=", {"c": "hello"}),
    ("c: 0x_\n  d: -0b__", {"c": "0x_", "d": "-0b__"}),
    ("c: 190:20:30\n  d: 1:30.5\n  e: -1:30", {"c": "190:20:30", "d": "1:30.5", "e": "-1:30"}),  # no base 60
    ("1: a\n  2020-01-01: b\n  true: c\n  0.5: d", {"1": "a", "2020-01-01": "b", "true": "c", "0.5": "d"}),
])
async def test_yaml_create_and_apply_store_what_go_yaml_decodes(
        http: httpx2.AsyncClient, data_yaml: str, stored: dict[str, str]) -> None:
    body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y1\ndata:\n  {data_yaml}\n"
    r = await http.post(CMS, content=body, headers=YAML)
    assert r.status_code == 201, r.text
    assert r.json()["data"] == stored
    r = await http.patch(f"{CMS}/y2", params={"fieldManager": "t11"}, content=body.replace("name: y1", "name: y2"),
                         headers=APPLY)
    assert r.status_code == 201, r.text
    assert (await http.get(f"{CMS}/y2")).json()["data"] == stored


def test_base_60_is_text_as_go_yaml_v2_reads_it_and_other_numbers_stay_numbers() -> None:
    """go-yaml v2 resolve.go has no base 60 (YAML 1.1's ``190:20:30`` = 685230, ``1:30.5`` =
    90.5); sigs.k8s.io/yaml stores the text, as a value and as a mapping key."""
    assert yamlsafe.safe_load("a: 190:20:30\nb: 1:30.5\nc: +1:30\n1:30: d\n") == {
        "a": "190:20:30", "b": "1:30.5", "c": "+1:30", "1:30": "d"}
    assert yamlsafe.safe_load("[685230, -1_0, 0x1f, 0b11, 017, 1.5, .5, 6.8523015e+5, .inf]") == [
        685230, -10, 31, 3, 15, 1.5, 0.5, 685230.15, float("inf")]


@pytest.mark.parametrize(("text", "value"), [
    ("-.5", -0.5), ("+.5", 0.5), ("1e-7", 1e-7), ("1e21", 1e21),  # yamlStyleFloat: floats
    ("1e3", 1000), ("1.0e5", 100000), ("1.0", 1), ("1.", 1), ("09", 9), ("-08", -8),  # JSON writes 1000
    ("0o17", 15), ("0O17", 15), ("0b+1", 1),  # ParseInt base 0; resolve's 0b branch
    ("18446744073709551616", 18446744073709552000),  # beyond uint64: a float64, written 'f'
    ("y", True), ("N", False), ("=", "="),  # resolveMap's y/n; no YAML 1.1 !!value
    ("1" * 5000, "1" * 5000), ("-0x" + "f" * 5000, "-0x" + "f" * 5000),  # no int64/uint64/float64: text
])
def test_a_plain_scalar_is_what_go_yaml_v2_resolves_and_json_writes(text: str, value: object) -> None:
    got = yamlsafe.safe_load(f"a: {text}")["a"]
    assert (type(got), got) == (type(value), value)


def test_keys_and_explicit_tags_go_yaml_v2_reads() -> None:
    # a float key is FormatFloat(float64, 'g', -1, 32); a uint64 key is no JSON key
    assert yamlsafe.safe_load("1e7: a\n1e3: b\ny: c\n") == {"1e+07": "a", "1000": "b", "true": "c"}
    with pytest.raises(yaml.YAMLError) as e:
        yamlsafe.safe_load("18446744073709551615: a")
    assert yamlsafe.go_yaml_error(e.value, "") == \
        'unsupported map key of type: uint64, key: 0xffffffffffffffff, value: "a"'
    # an explicit tag go-yaml resolves the text to: its value (float64 of an int for !!float)
    assert yamlsafe.safe_load("[!!int 0o17, !!float 0x1f, !!bool y]") == [15, 31, True]


async def test_yaml_numbers_go_yaml_resolves_are_numbers_in_typed_fields(http: httpx2.AsyncClient) -> None:
    """``replicas: 1e3`` is a float64 to go-yaml, 1000 in the JSON kube-apiserver decodes; pumice
    kept it a string (a 400: cannot unmarshal string into ... int64)."""
    body = ("apiVersion: v1\nkind: Pod\nmetadata: {name: n1}\nspec:\n  terminationGracePeriodSeconds: 1e3\n"
            "  activeDeadlineSeconds: 0o17\n  containers:\n  - name: c\n    image: busybox\n"
            "    ports: [{containerPort: 09}]\n"
            "    resources: {requests: {cpu: +.5, memory: 1.0e5}, limits: {cpu: 1e3}}\n")
    r = await http.post("/api/v1/namespaces/default/pods", content=body, headers=YAML)
    assert r.status_code == 201, r.text
    spec = (await http.get("/api/v1/namespaces/default/pods/n1")).json()["spec"]
    c = spec["containers"][0]
    assert (spec["terminationGracePeriodSeconds"], spec["activeDeadlineSeconds"], c["ports"][0]["containerPort"]) \
        == (1000, 15, 9)
    assert c["resources"] == {"requests": {"cpu": "500m", "memory": "100k"}, "limits": {"cpu": "1k"}}
    r = await http.post(CMS, content="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: n2}\ndata: {c: 1e3}\n",
                        headers=YAML)
    assert (r.status_code, r.json()["message"]) == (400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
                                                    "json: cannot unmarshal number into Go struct field "
                                                    "ConfigMap.data of type string"), r.text


async def test_a_number_longer_than_int_takes_is_stored_as_text(http: httpx2.AsyncClient) -> None:
    """review21 W-7: 5,000 digits fit no int64, uint64 or float64, so go-yaml keeps the text and
    kube-apiserver stores it; pumice's int() refused it with its own ValueError (a 500)."""
    big = "1" * 5000
    r = await http.post(CMS, content=f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: n3}}\ndata: {{k: {big}}}\n",
                        headers=YAML)
    assert (r.status_code, r.json()["data"]) == (201, {"k": big}), r.text


def test_a_plain_merge_key_merges_and_any_other_plain_lt_lt_is_text() -> None:
    """review21 W-1: go-yaml v2's resolve gives ``<<`` no tag of its own ('<' has no hint in
    resolve_table); only the decoder's isMerge makes a plain (or ``!!merge``) mapping key ``<<`` a
    merge. A value or list item ``<<`` is the text, a quoted key ``"<<"`` a plain key."""
    assert yamlsafe.safe_load("a: <<\nb: [<<, !!merge <<]\n'<<': c\nm: {<<: {p: 1, q: 1}, q: 2}\n"
                              "r: {!!merge <<: [{z: 3}]}\n") == {
        "a": "<<", "b": ["<<", "<<"], "<<": "c", "m": {"p": 1, "q": 2}, "r": {"z": 3}}


async def test_a_lt_lt_value_is_stored_and_a_scalar_merge_is_go_yamls_400(http: httpx2.AsyncClient) -> None:
    """review21 W-1: ``data: {k: <<}`` was a 400 (PyYAML: no constructor for the merge tag);
    kube-apiserver stores the text. ``<<: x`` is go-yaml's failWantMap (no line), not PyYAML's
    'expected a mapping or list of mappings for merging'."""
    r = await http.post(CMS, content="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m1}\ndata: {k: <<}\n",
                        headers=YAML)
    assert (r.status_code, r.json()["data"]) == (201, {"k": "<<"}), r.text
    for merge in ("x", "[x]", "[{a: b}, x]"):
        r = await http.post(CMS, content=f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: m2}}\n"
                                         f"data: {{k: '1', <<: {merge}}}\n", headers=YAML)
        assert (r.status_code, r.json()["message"]) == (400, "error converting YAML to JSON: yaml: map merge "
                                                        "requires map or sequence of maps as the value"), r.text


async def test_a_yaml_set_is_a_mapping_of_nulls(http: httpx2.AsyncClient) -> None:
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y3\n  annotations: !!set {a, b}\n"
    r = await http.post(CMS, content=body, headers=YAML)
    assert r.status_code < 500, r.text


@pytest.mark.parametrize(("data_yaml", "message"), [
    ("~: a", 'error converting YAML to JSON: unsupported map key of type: %!s(<nil>), key: <nil>, value: "a"'),
    ("[x]: a", "error converting YAML to JSON: unsupported map key of type: list"),
])
async def test_a_null_or_collection_key_is_400_and_stores_nothing(
        http: httpx2.AsyncClient, data_yaml: str, message: str) -> None:
    body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y4\ndata:\n  {data_yaml}\n"
    r = await http.post(CMS, content=body, headers=YAML)
    assert r.status_code == 400, r.text
    assert r.json()["message"].startswith(message)
    assert (await http.get(f"{CMS}/y4")).status_code == 404


@pytest.mark.parametrize(("body", "why"), [
    ("a: [unclosed", "yaml: line 1: did not find expected ',' or ']'"),
    ("a: b\n c: d: e", "yaml: line 2: mapping values are not allowed in this context"),
    ('a: "x', "yaml: found unexpected end of stream"),
    ("a:\n  - b\n - c", "yaml: line 2: did not find expected key"),
    ("a: *x", "yaml: unknown anchor 'x' referenced"),
])
async def test_a_yaml_body_that_does_not_parse_is_400_in_go_yamls_words(
        http: httpx2.AsyncClient, body: str, why: str) -> None:
    """trial 19 F-4: the message was PyYAML's (``while parsing a flow sequence in "<byte string>",
    line 1, column 4 ...``); kube-apiserver answers sigs.k8s.io/yaml's wrap of go-yaml's error."""
    r = await http.post(CMS, content=body, headers=YAML)
    assert (r.status_code, r.json()["reason"]) == (400, "BadRequest"), r.text
    assert r.json()["message"] == f"error converting YAML to JSON: {why}"


@pytest.mark.parametrize(("value", "why"), [
    ("!!int zz", "cannot decode !!str `zz` as a !!int"),
    ("!!int 1.5", "cannot decode !!float `1.5` as a !!int"),
    ("!!float abc", "cannot decode !!str `abc` as a !!float"),
    ("!!bool x", "cannot decode !!str `x` as a !!bool"),
    ("!!int 0x_", "cannot decode !!str `0x_` as a !!int"),
    ("!!int 1:30", "cannot decode !!str `1:30` as a !!int"),
    ("!!float 1:30.5", "cannot decode !!str `1:30.5` as a !!float"),
    ("!!int 1e3", "cannot decode !!float `1e3` as a !!int"),  # go-yaml's resolution names the tag
    ("!!int " + "1" * 5000, f"cannot decode !!str `{'1' * 5000}` as a !!int"),  # review21 W-7: was a 500
])
async def test_a_scalar_its_explicit_tag_cannot_hold_is_400_not_500(
        http: httpx2.AsyncClient, value: str, why: str) -> None:
    """Found with trial 19 F-4: PyYAML's ValueError / KeyError of ``!!int zz`` was a 500 with a
    traceback; go-yaml's resolve refuses it (``yaml: cannot decode ...``, no line)."""
    body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y5\ndata:\n  a: {value}\n"
    r = await http.post(CMS, content=body, headers=YAML)
    assert (r.status_code, r.json()["message"]) == (400, f"error converting YAML to JSON: yaml: {why}"), r.text
