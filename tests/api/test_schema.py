from __future__ import annotations

from pumice.api.schema import default, prune, validate

SCHEMA = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^[a-z]+$"},
                "replicas": {"type": "integer", "format": "int32", "default": 1, "minimum": 0, "maximum": 10},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                "cpu": {"x-kubernetes-int-or-string": True,
                        "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "items": {"type": "array", "minItems": 1, "maxItems": 2,
                          "items": {"type": "object", "properties": {"x": {"type": "integer", "default": 7}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                "maybe": {"type": "string", "nullable": True},
                "nested": {"type": "object", "default": {},
                           "properties": {"depth": {"type": "integer", "default": 3}}},
                "embedded": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    },
}


def test_a_valid_object_has_no_causes():
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "whatever": 1},
           "spec": {"name": "abc", "replicas": 3, "mode": "a", "cpu": "500m", "labels": {"k": "v"},
                    "items": [{"x": 1}], "maybe": None, "ratio": 0.5}}
    assert validate(SCHEMA, obj) == []


def test_wrong_type_is_reported_with_the_upstream_message():
    [cause] = validate(SCHEMA, {"spec": {"name": "abc", "replicas": "three"}})
    assert cause.field == "spec.replicas"
    assert cause.reason == "FieldValueTypeInvalid"
    # the Invalid value is the JSON type seen (kube-openapi InvalidType's value), not the value
    assert cause.message == 'Invalid value: "string": spec.replicas in body must be of type integer: "string"'


def test_missing_required_field():
    [cause] = validate(SCHEMA, {"spec": {}})
    assert (cause.field, cause.reason, cause.message) == ("spec.name", "FieldValueRequired", "Required value")


def test_enum_message_lists_supported_values():
    [cause] = validate(SCHEMA, {"spec": {"name": "abc", "mode": "c"}})
    assert cause.reason == "FieldValueNotSupported"
    assert cause.message == 'Unsupported value: "c": supported values: "a", "b"'


def test_bounds_lengths_patterns_and_item_counts():
    causes = validate(SCHEMA, {"spec": {"name": "ABCDEF", "replicas": 11, "ratio": 0, "items": [], "labels": {"k": 1}}})
    by_field = {(c.field, c.reason) for c in causes}
    assert ("spec.name", "FieldValueTooLong") in by_field
    assert ("spec.name", "FieldValueInvalid") in by_field  # pattern
    assert ("spec.replicas", "FieldValueInvalid") in by_field
    assert ("spec.ratio", "FieldValueInvalid") in by_field
    assert ("spec.items", "FieldValueInvalid") in by_field
    assert ("spec.labels.k", "FieldValueTypeInvalid") in by_field
    msgs = [c.message for c in causes if c.field == "spec.replicas"]
    assert msgs == ["Invalid value: 11: spec.replicas in body should be less than or equal to 10"]
    [too_many] = validate(SCHEMA, {"spec": {"name": "a", "items": [{}, {}, {}]}})
    assert too_many.reason == "FieldValueTooMany"


def test_int_or_string_accepts_both_and_rejects_others():
    assert validate(SCHEMA, {"spec": {"name": "a", "cpu": 2}}) == []
    [cause] = validate(SCHEMA, {"spec": {"name": "a", "cpu": [1]}})
    assert cause.field == "spec.cpu" and cause.reason == "FieldValueTypeInvalid"


def test_null_only_where_nullable():
    [cause] = validate(SCHEMA, {"spec": {"name": "a", "mode": None}})
    assert cause.field == "spec.mode" and 'must be of type string: "null"' in cause.message


def test_embedded_resource_needs_api_version_and_kind():
    causes = validate(SCHEMA, {"spec": {"name": "a", "embedded": {"metadata": {}}}})
    assert {c.field for c in causes} == {"spec.embedded.apiVersion", "spec.embedded.kind"}


def test_defaults_fill_missing_fields_recursively():
    obj = {"spec": {"name": "a", "items": [{}, {"x": 2}], "replicas": None}}
    default(SCHEMA, obj)
    assert obj["spec"]["replicas"] == 1
    assert obj["spec"]["items"] == [{"x": 7}, {"x": 2}]
    assert obj["spec"]["nested"] == {"depth": 3}


def test_prune_removes_unknown_fields_and_reports_their_paths():
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "anything": 1},
           "extra": 1,
           "spec": {"name": "a", "foo": 1, "items": [{"x": 1, "y": 2}],
                    "free": {"anything": 1, "known": {"a": "s", "b": 1}},
                    "labels": {"k": "v"}, "embedded": {"apiVersion": "v1", "kind": "Pod", "q": 1}}}
    removed = prune(SCHEMA, obj)
    assert removed == [".extra", ".spec.foo", ".spec.items[0].y", ".spec.free.known.b"]
    assert obj["metadata"] == {"name": "n", "anything": 1}
    assert obj["spec"]["free"] == {"anything": 1, "known": {"a": "s"}}
    assert obj["spec"]["embedded"]["q"] == 1


def test_list_type_map_and_set_reject_duplicates():
    schema = {"type": "object", "properties": {
        "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                       "items": {"type": "object", "properties": {"type": {"type": "string"}}}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}
    causes = validate(schema, {"conditions": [{"type": "A"}, {"type": "B"}, {"type": "A"}], "tags": ["x", "y", "x"]})
    assert [(c.field, c.reason, c.message) for c in causes] == [
        ("conditions[2]", "FieldValueDuplicate", 'Duplicate value: {"type":"A"}'),
        ("tags[2]", "FieldValueDuplicate", 'Duplicate value: "x"'),
    ]


def test_nulls_of_non_nullable_fields_are_dropped_or_defaulted():
    obj = {"spec": {"name": "a", "mode": None, "maybe": None, "replicas": None, "labels": {"k": None, "j": "v"}}}
    default(SCHEMA, obj)
    assert obj["spec"] == {"name": "a", "maybe": None, "replicas": 1, "labels": {"j": "v"}, "nested": {"depth": 3}}
    assert validate(SCHEMA, obj) == []
