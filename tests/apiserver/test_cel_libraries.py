"""Kubernetes' CEL libraries in CRD validation rules (quantity, url, ip, cidr, strings, lists,
regex, format, sets, optional values), their error texts, and the type-check of field selections
at CRD create (``undefined field``), on hand-written schemas and the upstream CRDs."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
import yaml

from pumice.api.crds import builtin_crds
from pumice.apiserver.celrules import compile_rules, rule_compile_causes
from pumice.client.base import ApiError
from pumice.testing.cluster import LocalCluster
from pumice.testing.paths import shared_dir

PROPS: dict[str, Any] = {
    "cpu": {"type": "string"}, "memory": {"type": "string"}, "endpoint": {"type": "string"},
    "address": {"type": "string"}, "network": {"type": "string"}, "name": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "weights": {"type": "array", "items": {"type": "integer"}},
}


def _schema(rule: str, message: str = "") -> dict[str, Any]:
    validation: dict[str, Any] = {"rule": rule}
    if message:
        validation["message"] = message
    return {"type": "object", "properties": {"spec": {
        "type": "object", "properties": PROPS, "x-kubernetes-validations": [validation]}}}


def causes(rule: str, message: str = "", **spec: Any) -> list[str]:
    """The causes ``spec`` gets from a CRD whose spec carries ``rule`` (compiled as at CRD create)."""
    assert rule_compile_causes(_schema(rule, message), "s") == []
    rules = compile_rules(_schema(rule, message))
    assert rules is not None
    obj = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec}
    return [f"{c.field}: {c.message}" for c in rules.validate(obj, None)]


def holds(rule: str, **spec: Any) -> bool:
    found = causes(rule, **spec)
    assert found in ([], [f'spec: Invalid value: "object": failed rule: {rule}']), found
    return not found


# --- quantity ---------------------------------------------------------------------------------


def test_quantity_comparisons_and_arithmetic() -> None:
    rule = "quantity(self.cpu).isLessThan(quantity('4')) && quantity(self.memory).compareTo(quantity('1Gi')) >= 0"
    assert holds(rule, cpu="3500m", memory="1Gi")
    assert not holds(rule, cpu="4", memory="1Gi")
    assert not holds(rule, cpu="1", memory="1G")  # 1G < 1Gi
    assert holds("quantity(self.cpu) == quantity('1000m')", cpu="1")  # equal by value, as Quantity.Equal
    assert holds("quantity(self.cpu).add(quantity('500m')).isGreaterThan(quantity('2'))", cpu="1600m")
    assert holds("quantity(self.memory).sub(1024).asInteger() == 0", memory="1Ki")
    assert holds("quantity(self.cpu).add(20).sub(quantity('100k')).sub(-50000) == quantity('20')", cpu="50k")
    assert holds("quantity(self.cpu).asApproximateFloat() == 0.25", cpu="250m")
    assert holds("quantity(self.cpu).sign() == -1 && !quantity('1.5').isInteger()", cpu="-1")
    assert holds("quantity(self.cpu).isInteger() && !quantity('9999999999999999999999999999999999999G').isInteger()",
                 cpu="50000000G")


def test_is_quantity_and_bad_quantities_give_kube_apiservers_errors() -> None:
    assert holds("isQuantity(self.cpu)", cpu="1.3Gi")
    for bad in ("1,3G", "200K", "Three", "Mi", " 1"):
        assert not holds("isQuantity(self.cpu)", cpu=bad), bad
    rule = "quantity(self.cpu).isLessThan(quantity('4'))"
    assert causes(rule, cpu="Three") == [
        "spec: Invalid value: \"object\": quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: " + rule]
    # the error names the rule by its message when it has one (upstream's ruleErrorString)
    assert causes(rule, "cpu below 4", cpu="200K") == [
        "spec: Invalid value: \"object\": unable to parse quantity's suffix evaluating rule: cpu below 4"]
    assert causes("quantity('9999999999999999999999999999999999999G').asInteger() > 0") == [
        "spec: Invalid value: \"object\": cannot convert value to integer evaluating rule: "
        "quantity('9999999999999999999999999999999999999G').asInteger() > 0"]
    # a value of the wrong type (an int-or-string given a number) has no overload
    assert causes("quantity(self.weights[0]).sign() == 1", weights=[1]) == [
        "spec: Invalid value: \"object\": 'no such overload': call arguments did not match a supported operator, "
        "function or macro signature for rule: quantity(self.weights[0]).sign() == 1"]


# --- url, ip, cidr ----------------------------------------------------------------------------


def test_urls() -> None:
    rule = ("isURL(self.endpoint) && url(self.endpoint).getScheme() == 'https' && "
            "url(self.endpoint).getHostname() == 'example.com' && url(self.endpoint).getPort() == '8443' && "
            "url(self.endpoint).getHost() == 'example.com:8443' && url(self.endpoint).getEscapedPath() == '/a%20b' && "
            "url(self.endpoint).getQuery()['x'] == ['1', '2']")
    assert holds(rule, endpoint="https://example.com:8443/a%20b?x=1&x=2")
    assert not holds(rule, endpoint="http://example.com:8443/a%20b?x=1&x=2")
    assert holds("url(self.endpoint).getHostname() == '::1'", endpoint="https://[::1]:80/")
    assert holds("isURL(self.endpoint)", endpoint="/just/a/path")
    assert not holds("isURL(self.endpoint)", endpoint="example.com")
    assert causes("url(self.endpoint).getScheme() == 'https'", endpoint="example.com") == [
        'spec: Invalid value: "object": URL parse error during conversion from string: parse "example.com": '
        "invalid URI for request evaluating rule: url(self.endpoint).getScheme() == 'https'"]
    assert "invalid port \":x\" after host" in causes("url(self.endpoint) != null", endpoint="https://h:x/")[0]


def test_ips() -> None:
    assert holds("isIP(self.address) && ip(self.address).family() == 4 && !ip(self.address).isLoopback() && "
                 "ip(self.address).isGlobalUnicast()", address="10.1.2.3")
    assert holds("ip(self.address).family() == 6 && ip(self.address).isLoopback() && ip(self.address) == ip('0::1')",
                 address="::1")
    assert holds("ip(self.address).isLinkLocalUnicast() && ip('224.0.0.9').isLinkLocalMulticast() && "
                 "ip('0.0.0.0').isUnspecified()", address="fe80::1")
    assert holds("ip.isCanonical(self.address)", address="2001:db8::1")
    assert not holds("ip.isCanonical(self.address)", address="2001:db8::0:1")
    assert not holds("isIP(self.address)", address="1.2.3")
    assert causes("ip(self.address).family() == 4", address="::ffff:1.2.3.4") == [
        'spec: Invalid value: "object": IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed evaluating rule: '
        "ip(self.address).family() == 4"]
    assert causes("ip(self.address).family() == 4", address="300.1.1.1")[0].startswith(
        'spec: Invalid value: "object": IP Address "300.1.1.1" parse error during conversion from string: '
        'ParseAddr("300.1.1.1"): unable to parse IP evaluating rule:')


def test_cidrs() -> None:
    rule = ("isCIDR(self.network) && cidr(self.network).containsIP(self.address) && "
            "cidr(self.network).containsIP(ip(self.address)) && cidr(self.network).prefixLength() == 16 && "
            "cidr(self.network).containsCIDR('10.1.2.0/24') && !cidr(self.network).containsCIDR(cidr('10.0.0.0/8')) && "
            "cidr(self.network).masked() == cidr('10.1.0.0/16') && cidr(self.network).ip() == ip('10.1.0.7')")
    assert holds(rule, network="10.1.0.7/16", address="10.1.200.1")
    assert not holds(rule, network="10.1.0.7/16", address="10.2.0.1")
    assert not holds("isCIDR(self.network)", network="10.0.0.0/33")
    assert causes("cidr(self.network).prefixLength() > 0", network="10.0.0.1") == [
        'spec: Invalid value: "object": network address parse error during conversion from string: network address '
        "parse error during conversion from string: netip.ParsePrefix(\"10.0.0.1\"): no '/' evaluating rule: "
        "cidr(self.network).prefixLength() > 0"]


# --- strings, regex, lists, sets, format --------------------------------------------------------


def test_string_extensions() -> None:
    assert holds("self.name.lowerAscii() == 'abc-é' && self.name.upperAscii() == 'ABC-é'", name="aBc-é")
    assert holds("self.name.split('.') == ['a', 'b', 'c'] && self.name.split('.', 2) == ['a', 'b.c'] && "
                 "self.name.split('.').join('/') == 'a/b/c' && self.name.replace('.', '', 1) == 'ab.c'", name="a.b.c")
    assert holds("self.name.substring(1, 3) == 'el' && self.name.substring(3) == 'lo' && self.name.charAt(1) == 'e' && "
                 "self.name.charAt(5) == '' && self.name.indexOf('l') == 2 && self.name.lastIndexOf('l') == 3 && "
                 "self.name.indexOf('l', 3) == 3 && self.name.reverse() == 'olleh'", name="hello")
    assert holds("self.name.trim() == 'x' && strings.quote(self.name) == '\"  x \\\\t\"'", name="  x \t")
    assert holds("'%s has %d replicas at %.1f%%'.format([self.name, 3, 99.5]) == 'web has 3 replicas at 99.5%'",
                 name="web")
    # doubles print as Go's strconv 'g' (cel-go's string(double)), strings inside lists quoted
    assert holds("'%s %s %s'.format([1.0, 1234567.0, [self.name, 2]]) == '1 1.234567e+06 [\"web\", 2]'", name="web")
    # cel-go >= 0.22: an offset past the end finds nothing instead of failing
    assert holds("self.name.indexOf('b', 9) == -1 && self.name.lastIndexOf('w', 9) == -1 && "
                 "self.name.indexOf('', 9) == 3 && self.name.lastIndexOf('') == 3", name="web")
    assert causes("self.name.charAt(9) == ''", name="abc") == [
        "spec: Invalid value: \"object\": index out of range: 9 evaluating rule: self.name.charAt(9) == ''"]
    assert causes("self.name.substring(2, 1) == ''", name="abc")[0].startswith(
        'spec: Invalid value: "object": invalid substring range. start: 2, end: 1 evaluating rule:')


def test_regex_find() -> None:
    assert holds("self.name.find('[0-9]+') == '123' && self.name.findAll('[a-z]') == ['a', 'b'] && "
                 "self.name.findAll('[0-9]', 2) == ['1', '2'] && self.name.find('z') == ''", name="a123b")


def test_list_extensions() -> None:
    assert holds("self.weights.isSorted() && self.weights.sum() == 6 && self.weights.min() == 1 && "
                 "self.weights.max() == 3 && self.weights.indexOf(2) == 1 && self.weights.lastIndexOf(9) == -1",
                 weights=[1, 2, 3])
    assert not holds("self.weights.isSorted()", weights=[3, 1])
    assert holds("self.tags.distinct() == ['a', 'b'] && self.tags.slice(1, 3) == ['b', 'a'] && "
                 "[self.tags, ['c']].flatten() == ['a', 'b', 'a', 'c'] && self.tags.lastIndexOf('a') == 2",
                 tags=["a", "b", "a"])
    assert holds("sets.contains(self.tags, ['a']) && sets.intersects(self.tags, ['z', 'b']) && "
                 "sets.equivalent(self.tags, ['b', 'a'])", tags=["a", "b", "a"])
    assert causes("self.weights.min() > 0", weights=[]) == [
        'spec: Invalid value: "object": min called on empty list evaluating rule: self.weights.min() > 0']
    assert causes("self.tags.slice(2, 1) == []", tags=["a"])[0].startswith(
        'spec: Invalid value: "object": cannot slice(2, 1), start index must be less than or equal to end index')


def test_named_formats_and_optional_values() -> None:
    rule = "!format.dns1123Label().validate(self.name).hasValue()"
    assert holds(rule, name="my-name")
    assert not holds(rule, name="My_Name")
    assert holds("format.named('uuid').hasValue() && !format.named('nope').hasValue() && "
                 "!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue() && "
                 "format.dns1123LabelPrefix().validate(self.name).orValue([]) == [] && "
                 "format.byte().validate('%%%').value() == ['invalid base64']", name="prefix-")
    found = causes("!format.qualifiedName().validate(self.name).hasValue()", name="a/b/c")
    assert len(found) == 1
    # messageExpression may use the libraries too
    schema = _schema("!format.dns1123Label().validate(self.name).hasValue()")
    schema["properties"]["spec"]["x-kubernetes-validations"][0]["messageExpression"] = \
        "'bad name: ' + format.dns1123Label().validate(self.name).value().join(', ')"
    rules = compile_rules(schema)
    assert rules is not None
    got = rules.validate({"metadata": {"name": "g"}, "spec": {"name": "x_y"}}, None)
    assert [c.message for c in got] == [
        'Invalid value: "object": bad name: a lowercase RFC 1123 label must consist of lower case alphanumeric '
        "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]
    assert holds("optional.of(self.name).orValue('') == 'a' && !optional.none().hasValue() && "
                 "optional.ofNonZeroValue('').orValue('z') == 'z'", name="a")


def test_the_prefix_formats_mask_a_trailing_dash_as_kube_apiservers_generate_name() -> None:
    """Review 20 V-9: format.*Prefix() masked only the dash (``s[:-1] + 'a'``); upstream's format
    library calls NameIsDNSLabel(s, true) etc., whose maskTrailingDash drops the character before
    the dash too, so a 63-character label and its dash, or ``a_-``, is a valid prefix."""
    label = "!format.dns1123LabelPrefix().validate(self.name).hasValue()"
    assert holds(label, name="x" * 63 + "-")
    assert not holds(label, name="x" * 64 + "-")
    assert holds(label, name="a_-")
    assert holds("!format.dns1035LabelPrefix().validate(self.name).hasValue()", name="a_-")
    assert holds("!format.dns1123SubdomainPrefix().validate(self.name).hasValue()", name="x" * 253 + "-")


def test_optional_syntax_is_accepted_and_the_rule_left_out(caplog: pytest.LogCaptureFixture) -> None:
    """``.?`` does not parse in the interpreter: the CRD is accepted (kube-apiserver accepts it),
    the rule is left out with a warning, the other rules still hold."""
    schema = _schema("self.?name.orValue('') != 'x'")
    schema["properties"]["spec"]["x-kubernetes-validations"].append({"rule": "self.name != 'y'"})
    assert rule_compile_causes(schema, "s") == []
    with caplog.at_level(logging.WARNING, logger="pumice.apiserver.celrules"):
        rules = compile_rules(schema)
    assert rules is not None and len(rules.rules) == 1
    assert "optional syntax" in caplog.text
    assert rules.validate({"metadata": {}, "spec": {"name": "x"}}, None) == []
    assert len(rules.validate({"metadata": {}, "spec": {"name": "y"}}, None)) == 1


def test_a_function_still_unknown_skips_its_rule_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    rule = "quantity(self.cpu).mul(2).isLessThan(quantity('4'))"
    with caplog.at_level(logging.WARNING, logger="pumice.apiserver.celrules"):
        assert causes(rule, cpu="1") == []
        assert causes(rule, cpu="3") == []
    assert caplog.text.count("not supported by pumice's CEL runtime") == 1


def test_rules_without_library_functions_pass_none() -> None:
    rules = compile_rules(_schema("self.name.size() < 5 && self.name.startsWith('a')"))
    assert rules is not None and rules.rules[0].functions == {}
    rules = compile_rules(_schema("self.name.lowerAscii() == 'a' && ip.isCanonical('::1')"))
    assert rules is not None and set(rules.rules[0].functions) == {"lowerAscii", "ip.isCanonical"}



def test_a_list_index_out_of_range_fails_the_rule_instead_of_the_request() -> None:
    """An index past a list's end is an evaluation error, so the rule fails with it (cel-go:
    ``index '5' out of range in list size '1'``; the package's text here). It escaped as an
    IndexError, a 500 for the write."""
    for rule in ("self.tags[5] == 'x'", "self.tags.exists(t, t == self.tags[9])"):
        [cause] = causes(rule, tags=["a"])
        assert cause.startswith('spec: Invalid value: "object": index out of bounds: ') and \
            cause.endswith(f" evaluating rule: {rule}"), cause


def test_a_library_error_absorbed_by_or_does_not_name_a_later_failure() -> None:
    """``(quantity(bad)... || true)`` absorbs the quantity error; the rule then fails in ``int()``,
    and that failure is what the cause says (was: the absorbed quantity error's text)."""
    rule = "(quantity(self.cpu).sign() > 0 || true) && int(self.name) > 0"
    [cause] = causes(rule, cpu="bogus", name="x")
    assert "quantities must match" not in cause and "int" in cause, cause

# --- type-check at CRD create --------------------------------------------------------------------


def test_undefined_fields_are_refused_with_cel_gos_error() -> None:
    schema = _schema("has(self.nmae) && self.tags.all(t, t != '') && oldSelf.cpu == self.cpu")
    assert [(c.field, c.message) for c in rule_compile_causes(schema, "x")] == [(
        "x.properties[spec].x-kubernetes-validations[0].rule",
        "Invalid value: \"has(self.nmae) && self.tags.all(t, t != '') && oldSelf.cpu == self.cpu\": compilation "
        "failed: ERROR: <input>:1:9: undefined field 'nmae' | has(self.nmae) && self.tags.all(t, t != '') && "
        "oldSelf.cpu == self.cpu | ........^",
    )]
    rule = "self.metadata.name.size() < 10 && self.kind == 'Gadget' && self.spec.cpu != self.status.cpu"
    root = {"type": "object", "x-kubernetes-validations": [{"rule": rule}],
            "properties": {"spec": {"type": "object", "properties": {"cpu": {"type": "string"}}}}}
    dot = rule.index(".status")  # cel-go points at the selection's '.', columns from 1
    assert [c.message.split("compilation failed: ")[1] for c in rule_compile_causes(root, "x")] == [
        f"ERROR: <input>:1:{dot + 1}: undefined field 'status' | {rule} | {'.' * dot}^"]
    # a messageExpression is checked too, with upstream's prefix
    schema = _schema("self.name != ''")
    schema["properties"]["spec"]["x-kubernetes-validations"][0]["messageExpression"] = "'bad ' + self.nme"
    assert [c.message for c in rule_compile_causes(schema, "x")] == [
        "Invalid value: \"'bad ' + self.nme\": messageExpression compilation failed: ERROR: <input>:1:14: "
        "undefined field 'nme' | 'bad ' + self.nme | .............^"]
    # through an index and the variable of a comprehension (the innermost binding of a name wins)
    rule = "self.tags[0].x == '' || self.weights.all(w, w > 0)"
    assert rule_compile_causes(_schema(rule), "x") == []  # items are scalars: not walked further
    ports = {"type": "object", "properties": {"ports": {"type": "array", "items": {
        "type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}}}
    for rule, name in [("self.ports.all(p, p.name != '' && p.prot > 0)", "prot"),
                       ("self.ports[0].nam == ''", "nam"),
                       ("self.ports.all(p, self.ports.exists(p, p.port > 0) && p.nme == '')", "nme"),
                       ("self.ports.map(p, p.port).all(x, x > 0) && self.ports.filter(q, q.bad).size() == 0", "bad")]:
        found = rule_compile_causes({**ports, "x-kubernetes-validations": [{"rule": rule}]}, "x")
        assert len(found) == 1 and f"undefined field '{name}'" in found[0].message, (rule, found)
    # maps, preserve-unknown-fields and escaped names are not refused
    loose = {"type": "object", "properties": {
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "x-y": {"type": "string"}, "namespace": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "self.labels.team == 'a' && self.extra.anything.at.all == 1 && "
                                              "self.x__dash__y == self.__namespace__"}]}
    assert rule_compile_causes(loose, "x") == []


def test_escaped_property_names_are_seen_as_upstream_names_them() -> None:
    schema = {"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"max-size": {"type": "integer"}, "namespace": {"type": "string"},
                       "a.b": {"type": "string"}, "labels": {"type": "object",
                                                          "additionalProperties": {"type": "string"}}},
        "x-kubernetes-validations": [
            {"rule": "self.max__dash__size <= 10 && self.__namespace__ != 'kube-system' && "
                     "self.a__dot__b.size() < 5 && !('x-y' in self.labels)"}]}}}
    assert rule_compile_causes(schema, "x") == []
    rules = compile_rules(schema)
    assert rules is not None and rules.rules[0].escaping is not None

    def check(**spec: Any) -> int:
        assert rules is not None
        return len(rules.validate({"metadata": {"name": "g"}, "spec": spec}, None))

    ok = {"max-size": 3, "namespace": "default", "a.b": "ab", "labels": {"team": "a"}}
    assert check(**ok) == 0
    assert check(**{**ok, "max-size": 11}) == 1
    assert check(**{**ok, "namespace": "kube-system"}) == 1
    assert check(**{**ok, "labels": {"x-y": "1"}}) == 1  # map keys are not escaped
    assert compile_rules(_schema("self.name != ''")).rules[0].escaping is None  # type: ignore[union-attr]


def _crds_in(folder: str) -> list[dict[str, Any]]:
    out = []
    for path in sorted((shared_dir() / "samples" / folder).rglob("*.yaml")):
        for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                out.append(doc)
    return out


def test_upstream_and_builtin_crds_pass_the_type_check() -> None:
    """Every rule of the upstream KubeRay and Volcano CRDs, and of pumice's own CRDs, names only
    declared fields (kube-apiserver accepts them)."""
    crds = _crds_in("kuberay") + _crds_in("volcano") + builtin_crds()
    with_rules = 0
    for crd in crds:
        for i, v in enumerate(crd["spec"]["versions"]):
            schema = v["schema"]["openAPIV3Schema"]
            assert rule_compile_causes(schema, f"spec.versions[{i}]") == [], crd["metadata"]["name"]
            with_rules += compile_rules(schema) is not None
    assert with_rules >= 4


async def test_a_crd_whose_rule_names_an_undeclared_field_is_refused(cluster: LocalCluster) -> None:
    """The upstream RayJob CRD with a typo in one of its rules: 422 at create, as kube-apiserver."""
    rayjob = next(c for c in _crds_in("kuberay") if c["spec"]["names"]["kind"] == "RayJob")
    crd = copy.deepcopy(rayjob)
    crd["metadata"] = {"name": "rayjobs.example.com"}
    crd["spec"]["group"] = "example.com"
    version = crd["spec"]["versions"][0]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"] = [{"rule": "!has(self.deletionStrategy) || has(self.shutdownAfterJobFinishez)"}]
    with pytest.raises(ApiError) as e:
        await cluster.client.create(crd)
    assert e.value.code == 422
    at = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert (f"{at}: Invalid value: \"!has(self.deletionStrategy) || has(self.shutdownAfterJobFinishez)\": "
            "compilation failed: ERROR: <input>:1:40: undefined field 'shutdownAfterJobFinishez'") in e.value.message
    spec["x-kubernetes-validations"] = [{"rule": "!has(self.deletionStrategy) || has(self.shutdownAfterJobFinishes)"}]
    assert await cluster.client.create(crd)


QUOTA_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "quotas.example.com"},
    "spec": {"group": "example.com", "names": {"kind": "Quota", "plural": "quotas"}, "scope": "Namespaced",
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {
                     "type": "object",
                     "properties": {"limit": {"x-kubernetes-int-or-string": True},
                                    "cidr": {"type": "string"}},
                     "x-kubernetes-validations": [
                         {"rule": "quantity(string(self.limit)).isLessThan(quantity('64Gi'))",
                          "message": "limit must be below 64Gi"},
                         {"rule": "!has(self.cidr) || cidr(self.cidr).prefixLength() >= 16",
                          "messageExpression": "'prefix /' + string(cidr(self.cidr).prefixLength()) + ' is too wide'"},
                     ]}}}}}]},
}


async def test_library_rules_over_the_api(cluster: LocalCluster) -> None:
    await cluster.client.create(copy.deepcopy(QUOTA_CRD))
    quotas = cluster.scheme.by_api_version_kind("example.com/v1", "Quota")

    def quota(name: str, **spec: Any) -> dict[str, Any]:
        return {"apiVersion": "example.com/v1", "kind": "Quota",
                "metadata": {"name": name, "namespace": "default"}, "spec": spec}

    assert await cluster.client.create(quota("ok", limit="32Gi", cidr="10.0.0.0/16"))
    for spec, text in [
        ({"limit": "64Gi"}, 'spec: Invalid value: "object": limit must be below 64Gi'),
        ({"limit": "lots"}, "spec: Invalid value: \"object\": quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: limit must be below 64Gi"),
        ({"limit": 1, "cidr": "10.0.0.0/8"}, 'spec: Invalid value: "object": prefix /8 is too wide'),
    ]:
        with pytest.raises(ApiError) as e:
            await cluster.client.create(quota("bad", **spec))
        assert e.value.code == 422 and e.value.message == f'Quota.example.com "bad" is invalid: {text}', e.value.message
    got = await cluster.client.get(quotas, "ok", "default")
    assert got["spec"]["limit"] == "32Gi"
