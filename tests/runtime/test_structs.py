"""Struct <-> dict and integers restored after the trip through protobuf doubles."""

from __future__ import annotations

import math
from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2
from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import InferenceCluster, ModelDeployment
from modelplane.api.openapi import validator_schema
from modelplane.runtime.crossplane.structs import (
    SERVER_BOOKKEEPING,
    dict_to_struct,
    drop_metadata,
    integral_floats_to_int,
    restore_integers,
    struct_to_dict,
)

json_scalars = st.none() | st.booleans() | st.text(max_size=8) | st.integers(-(2**40), 2**40)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(st.dictionaries(st.text(max_size=6), json_values, max_size=5))
def test_round_trip_gives_back_the_data_with_integers_restored(data: dict[str, Any]) -> None:
    back = integral_floats_to_int(struct_to_dict(dict_to_struct(data)))
    assert back == data
    assert _no_integral_floats(back)


def _no_integral_floats(value: Any) -> bool:
    if isinstance(value, float):
        return not value.is_integer()
    if isinstance(value, dict):
        return all(_no_integral_floats(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_integral_floats(v) for v in value)
    return True


def test_struct_to_dict_matches_the_sdk_reading() -> None:
    data = {"a": [1, "x", None, True, {"b": 2.5}], "c": {}}
    struct = json_format.ParseDict(data, struct_pb2.Struct())
    assert struct_to_dict(struct) == json_format.MessageToDict(struct)


def test_unset_value_reads_as_none() -> None:
    struct = struct_pb2.Struct()
    struct.fields["empty"].SetInParent()  # a Value with no kind set
    assert struct_to_dict(struct) == {"empty": None}


def test_integers_restored_where_the_schema_says_integer() -> None:
    schema = validator_schema(ModelDeployment)
    raw = {
        "spec": {"replicas": 3.0, "template": {"spec": {"engines": [{"copies": 2.0, "name": "e"}]}}}
    }
    restored = restore_integers(raw, schema)
    assert restored["spec"]["replicas"] == 3 and type(restored["spec"]["replicas"]) is int
    copies = restored["spec"]["template"]["spec"]["engines"][0]["copies"]
    assert copies == 2 and type(copies) is int


def test_non_integral_and_non_finite_floats_are_kept_for_validation_to_report() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert restore_integers({"n": 2.5}, schema) == {"n": 2.5}
    assert math.isnan(restore_integers({"n": math.nan}, schema)["n"])
    assert restore_integers({"n": math.inf}, schema) == {"n": math.inf}


def test_number_fields_and_strings_are_not_touched() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "number"}, "s": {"type": "string"}}}
    restored = restore_integers({"x": 1.0, "s": "1.0"}, schema)
    assert type(restored["x"]) is float and restored["s"] == "1.0"


def test_int_or_string_fields_become_integers() -> None:
    schema = {"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": True}}}
    assert type(restore_integers({"p": 8080.0}, schema)["p"]) is int
    any_of = {
        "type": "object",
        "properties": {"p": {"anyOf": [{"type": "integer"}, {"type": "string"}]}},
    }
    assert type(restore_integers({"p": 8080.0}, any_of)["p"]) is int


def test_free_form_content_gets_every_integral_float_as_int() -> None:
    # spec.crossplane is free-form; a pod template's securityContext ends up remote.
    schema = validator_schema(InferenceCluster)
    restored = restore_integers({"spec": {"crossplane": {"x": {"runAsUser": 1000.0}}}}, schema)
    assert type(restored["spec"]["crossplane"]["x"]["runAsUser"]) is int


def test_additional_properties_schema_applies_to_map_values() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert restore_integers({"a": 1.0, "b": 2.0}, schema) == {"a": 1, "b": 2}


@given(
    json_values,
    st.sampled_from([None, {}, {"type": "integer"}, {"items": "garbage"}, {"properties": []}]),
)
def test_garbage_never_raises(value: Any, schema: Any) -> None:
    restore_integers(value, schema)
    integral_floats_to_int(value)


def test_dict_to_struct_accepts_tuples_and_nested_mappings() -> None:
    struct = dict_to_struct({"a": (1, 2), "b": {"c": ("x",)}})
    assert struct_to_dict(struct) == {"a": [1.0, 2.0], "b": {"c": ["x"]}}


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "X"},
        {"kind": "X", "metadata": "not an object"},
        {"kind": "X", "metadata": {"name": "a"}},
        {"kind": "X", "metadata": {"name": "a", "managedFields": [{"manager": "m"}]}},
    ],
)
def test_dropping_bookkeeping_removes_only_it_and_twice_is_once(obj: dict[str, Any]) -> None:
    struct = dict_to_struct(obj)
    drop_metadata(struct, SERVER_BOOKKEEPING)
    expected = dict(obj)
    if isinstance(obj.get("metadata"), dict):
        expected["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    assert struct_to_dict(struct) == expected
    drop_metadata(struct, SERVER_BOOKKEEPING)
    assert struct_to_dict(struct) == expected
