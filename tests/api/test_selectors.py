"""Label selectors: kube-apiserver's semantics for every form, in one table, and a check that no
module but pumice/api/selectors.py matches labels by hand.

Mirrors: k8s.io/apimachinery pkg/labels/selector_test.go (TestRequirementConstructor,
TestToString, TestRequirementSelectorMatching) and pkg/apis/meta/v1/helpers_test.go
(TestLabelSelectorAsSelector).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from pumice.api.selectors import (
    SelectorError,
    as_selector,
    format_label_selector,
    from_label_selector,
    from_node_selector_requirements,
    from_set,
    parse_label_selector,
)
from pumice.client.informer import matches_labels
from pumice.controllers.kube.replicaset import workload_selector
from pumice.controllers.ray import association
from pumice.scheduler.volcano.plugins.predicates import match_label_selector

NONE: dict[str, str] = {}
A1 = {"a": "1"}
A2 = {"a": "2"}
A_EMPTY = {"a": ""}
B1 = {"b": "1"}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


# (metav1.LabelSelector, labels, matches)
LABEL_SELECTOR_CASES = [
    (None, NONE, False),  # nil selects nothing (labels.Nothing)
    (None, A1, False),
    ({}, NONE, True),  # empty selects everything
    ({}, A1, True),
    ({"matchLabels": {}}, A1, True),
    ({"matchLabels": {}, "matchExpressions": []}, NONE, True),
    ({"matchLabels": A1}, A1, True),
    ({"matchLabels": A1}, A2, False),
    ({"matchLabels": A1}, NONE, False),
    ({"matchLabels": A1}, {**A1, **B1}, True),
    ({"matchLabels": A_EMPTY}, A_EMPTY, True),
    ({"matchLabels": A_EMPTY}, NONE, False),  # an empty value still needs the key
    ({"matchExpressions": [expr("a", "In", "1", "2")]}, A2, True),
    ({"matchExpressions": [expr("a", "In", "1", "2")]}, NONE, False),
    ({"matchExpressions": [expr("a", "NotIn", "1")]}, NONE, True),  # absent key satisfies NotIn
    ({"matchExpressions": [expr("a", "NotIn", "1")]}, A1, False),
    ({"matchExpressions": [expr("a", "NotIn", "1")]}, A2, True),
    ({"matchExpressions": [expr("a", "Exists")]}, A_EMPTY, True),
    ({"matchExpressions": [expr("a", "Exists")]}, B1, False),
    ({"matchExpressions": [expr("a", "DoesNotExist")]}, B1, True),
    ({"matchExpressions": [expr("a", "DoesNotExist")]}, A_EMPTY, False),
    ({"matchLabels": A1, "matchExpressions": [expr("b", "Exists")]}, A1, False),  # a conjunction
    ({"matchLabels": A1, "matchExpressions": [expr("b", "Exists")]}, {**A1, **B1}, True),
]


@pytest.mark.parametrize(("sel", "labels", "want"), LABEL_SELECTOR_CASES)
def test_label_selector_matches_as_kube_apiserver(sel: Any, labels: dict[str, str], want: bool) -> None:
    assert from_label_selector(sel).matches(labels) is want


BAD_LABEL_SELECTORS = [
    {"matchExpressions": [expr("a", "Foo", "1")]},  # unknown operator
    {"matchExpressions": [expr("a", "Gt", "1")]},  # Gt/Lt belong to node selectors only
    {"matchExpressions": [expr("a", "In")]},  # In needs values
    {"matchExpressions": [expr("a", "NotIn")]},
    {"matchExpressions": [expr("a", "Exists", "1")]},  # Exists takes none
    {"matchExpressions": [expr("a", "DoesNotExist", "1")]},
]


@pytest.mark.parametrize("sel", BAD_LABEL_SELECTORS)
def test_a_selector_that_does_not_convert_raises_instead_of_matching(sel: dict[str, Any]) -> None:
    with pytest.raises(SelectorError):
        from_label_selector(sel)


@pytest.mark.parametrize(("labels_set", "labels", "want"), [
    (None, A1, True),  # SelectorFromSet(nil) is Everything
    ({}, NONE, True),
    (A1, A1, True),
    (A1, {**A1, **B1}, True),
    (A1, A2, False),
    (A1, NONE, False),
])
def test_a_label_set_matches_when_every_pair_is_present(labels_set: Any, labels: dict[str, str], want: bool) -> None:
    assert from_set(labels_set).matches(labels) is want


@pytest.mark.parametrize(("exprs", "labels", "want"), [
    ([expr("a", "Gt", "5")], {"a": "6"}, True),
    ([expr("a", "Gt", "5")], {"a": "5"}, False),
    ([expr("a", "Lt", "5")], {"a": "-1"}, True),
    ([expr("a", "Gt", "5")], {"a": "x"}, False),  # a non-integer label never compares
    ([expr("a", "Gt", "5")], NONE, False),
    ([expr("a", "In", "1"), expr("b", "Exists")], {**A1, **B1}, True),
    ([], NONE, True),
])
def test_node_selector_requirements(exprs: list[dict[str, Any]], labels: dict[str, str], want: bool) -> None:
    assert from_node_selector_requirements(exprs).matches(labels) is want


@pytest.mark.parametrize("exprs", [
    [expr("a", "Gt", "x")],  # the operand must be an integer
    [expr("a", "Lt", "1", "2")],  # exactly one operand
    [expr("a", "Gt")],
    [expr("a", "Foo", "1")],
])
def test_bad_node_selector_requirements_raise(exprs: list[dict[str, Any]]) -> None:
    with pytest.raises(SelectorError):
        from_node_selector_requirements(exprs)


@pytest.mark.parametrize(("text", "labels", "want"), [
    ("", A1, True),
    ("   ", NONE, True),
    ("a", A_EMPTY, True),
    ("!a", A_EMPTY, False),
    ("a!=1", NONE, True),  # != holds when the key is absent
    ("a=1", NONE, False),
    ("a==1", A1, True),
    ("a>1", A2, True),
    ("a<1", A2, False),
    ("a>1", {"a": "x"}, False),
    ("a notin (1,2)", NONE, True),
    ("a in (1,2)", NONE, False),
])
def test_label_selector_strings(text: str, labels: dict[str, str], want: bool) -> None:
    assert parse_label_selector(text).matches(labels) is want


@pytest.mark.parametrize("text", ["a>x", "a<"])
def test_bad_label_selector_strings_raise(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(text)


@pytest.mark.parametrize(("text", "message"), [
    # trial-13 F-3: a missing comma was read as a two-value set
    ("n in (1 2)", "found '2', expected: ',' or ')'"),
    ("n notin (1 2)", "found '2', expected: ',' or ')'"),
    ("n in (1", "found '', expected: ',' or ')'"),
    ("n in (1,", "found '', expected: ',', or identifier"),
    ("n in (1,=)", "found '=', expected: ',', or identifier"),
    ("n in (", "found '', expected: ',', ')' or identifier"),
    ("n in (!)", "found '!', expected: ',', ')' or identifier"),
    ("n in 1", "found '1' expected: '('"),
])
def test_a_malformed_value_set_is_refused_with_apimachinerys_words(text: str, message: str) -> None:
    """k8s.io/apimachinery labels Parser.parseValues / parseIdentifiersList."""
    with pytest.raises(SelectorError) as e:
        parse_label_selector(text)
    assert str(e.value) == f"unable to parse requirement: {message}"


@pytest.mark.parametrize(("text", "message"), [
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, >, <"),
    ("a>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be "
            "an integer"),
    ("a<", "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be "
           "an integer"),
    ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ("a=b c", "found 'c', expected: ',' or 'end of string'"),
    ("a=b,", "found '', expected: identifier after ','"),
    ("a,,b", "found ',', expected: identifier after ','"),
    ("(a)", "found '(', expected: !, identifier, or 'end of string'"),
    ("!", "unable to parse requirement: found '', expected: identifier"),
    ("a==(", "unable to parse requirement: found '(', expected: identifier"),
    ("app:monolith", "unable to parse requirement: <nil>: Invalid value: \"app:monolith\": name part must consist of "
                     "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                     "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                     "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ("a=" + "b" * 64, f"unable to parse requirement: values[0][a]: Invalid value: \"{'b' * 64}\": must be no more "
                      "than 63 characters"),
])
def test_selector_string_errors_are_apimachinerys(text: str, message: str) -> None:
    """trial-13 F-3 (wording): kube-apiserver answers a bad labelSelector with the parser's
    error (kubectl prefixes 'Unable to find ... that match label selector'); the <nil> is the
    key check's empty field path."""
    with pytest.raises(SelectorError) as e:
        parse_label_selector(text)
    assert str(e.value) == message


@pytest.mark.parametrize(("text", "labels", "want"), [
    ("in in (in)", {"in": "in"}, True),
    ("a=1 , b", {"a": "1", "b": ""}, True),
    ("a=", {"a": ""}, True),
    ("a!=", {"a": "x"}, True),
])
def test_selector_strings_upstream_takes(text: str, labels: dict[str, str], want: bool) -> None:
    assert parse_label_selector(text).matches(labels) is want


@pytest.mark.parametrize(("text", "values"), [
    ("n in ()", ("",)),
    ("n notin ()", ("",)),
    ("n in (,)", ("",)),
    ("n in (,a)", ("", "a")),
    ("n in (a,)", ("", "a")),
    ("n in (a,,b)", ("", "a", "b")),
    ("n in (b,a,b)", ("a", "b")),
])
def test_empty_members_of_a_value_set_are_the_empty_string(text: str, values: tuple[str, ...]) -> None:
    """trial-13 F-3: upstream reads ``()`` as {""} and a comma with nothing on one side as a ""
    member (no error); the values are a sorted set."""
    [req] = parse_label_selector(text).requirements
    assert req.values == values


def test_in_an_empty_set_matches_only_an_empty_value_and_notin_the_rest() -> None:
    assert not parse_label_selector("n in ()").matches({"n": "1"})
    assert not parse_label_selector("n in ()").matches({})
    assert parse_label_selector("n in ()").matches({"n": ""})
    assert parse_label_selector("n notin ()").matches({"n": "1"})
    assert parse_label_selector("n notin ()").matches({})
    assert not parse_label_selector("n notin (,)").matches({"n": ""})


def test_as_selector_tells_the_two_dict_forms_apart() -> None:
    assert as_selector({"matchLabels": A1}).matches(A1)
    assert not as_selector({"matchLabels": A1}).matches({"matchLabels": "x"})
    assert as_selector({"app": "web"}).matches({"app": "web"})
    assert not as_selector(None).matches(NONE)


@pytest.mark.parametrize(("sel", "text"), [
    (None, "<none>"),
    ({}, "<none>"),
    ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
    ({"matchExpressions": [expr("z", "In", "y", "x"), expr("a", "DoesNotExist")]}, "!a,z in (x,y)"),
    ({"matchExpressions": [expr("a", "Foo")]}, "<error>"),
    ({"app": "web"}, "app=web"),
])
def test_format_label_selector_as_kubectl_prints_it(sel: Any, text: str) -> None:
    assert format_label_selector(sel) == text


# Every caller goes through pumice.api.selectors, so they agree wherever their contracts meet:
# a non-nil metav1.LabelSelector (the informer reads a missing selector as "no filter" and
# workloads treat an empty one as "adopt nothing", both on purpose).
@pytest.mark.parametrize(("sel", "labels", "want"), [c for c in LABEL_SELECTOR_CASES if c[0]])
def test_callers_agree_on_label_selectors(sel: Any, labels: dict[str, str], want: bool) -> None:
    assert matches_labels(labels, sel) is want
    assert match_label_selector(labels, sel) is want
    if from_label_selector(sel).requirements:
        assert workload_selector(sel).matches(labels) is want


def test_workloads_with_an_empty_selector_adopt_nothing() -> None:
    assert not workload_selector(None).matches(A1)
    assert not workload_selector({}).matches(A1)
    assert not workload_selector({"matchLabels": {}}).matches(NONE)


def test_association_selectors_are_label_sets() -> None:
    sel = association.head_pods_selector("rc")
    assert association.matches({**sel, "x": "y"}, sel)
    assert not association.matches({}, sel)
    assert association.selector_string(sel) == str(from_set(sel))


# --- only pumice/api/selectors.py matches labels ------------------------------------------------

PUMICE = Path(__file__).resolve().parents[2] / "pumice"
# The vectorized node table evaluates PodInfo's requirements (built and matched by
# pumice.api.selectors) column by column with numpy; tests/scheduler_default checks it against
# the per-node path.
ALLOWED = {"api/selectors.py", "scheduler/default/vector.py"}
# a hand-written label-pair comparison (labels.get(k) != v, labels[k] == v) or a hand-written
# selector-string parser (part.split("!=", 1))
HAND_MATCH = re.compile(r"labels(\.get\(k\)|\[k\])\s*[!=]=\s*v\b|\.(split|partition)\(\"!=\"")


def _operator_dispatch(tree: ast.AST) -> list[int]:
    """Lines comparing with a selector-only operator name (``op == "DoesNotExist"``)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for c in [node.left, *node.comparators]:
                if isinstance(c, ast.Constant) and c.value in ("DoesNotExist", "NotIn", "Gt", "Lt"):
                    out.append(node.lineno)
    return out


def test_only_api_selectors_matches_labels() -> None:
    offenders = []
    for path in sorted(PUMICE.rglob("*.py")):
        rel = path.relative_to(PUMICE).as_posix()
        if rel in ALLOWED:
            continue
        text = path.read_text()
        offenders += [f"{rel}:{n}: compares with a selector operator" for n in _operator_dispatch(ast.parse(text))]
        offenders += [f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: matches label pairs by hand"
                      for m in HAND_MATCH.finditer(text)]
    assert offenders == [], "match labels through pumice.api.selectors:\n" + "\n".join(offenders)
