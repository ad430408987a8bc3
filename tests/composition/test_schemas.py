"""Every composed object validates against its real schema (strict: unknown fields are errors)."""

from __future__ import annotations

import jsonschema
import pytest

from modelplane.composition import compose_replica
from modelplane.composition.delivery import shared_objects

from .schemas import crd_validator, kubernetes_versions, require_shared, strict, validate_delivered
from .shapes import SHAPES


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_object_of_every_shape_is_schema_valid(shape: str) -> None:
    require_shared()
    composition = compose_replica(*SHAPES[shape])
    for composed in composition.objects:
        validate_delivered(composed.object)


def test_the_objects_a_cluster_shares_are_schema_valid() -> None:
    require_shared()
    for _, delivered in shared_objects("us-east-1", ("ClusterProviderConfig", "us-east-1-pc")):
        validate_delivered(delivered)


def test_core_kinds_are_checked_from_kubernetes_1_34() -> None:
    versions = kubernetes_versions()
    assert versions[0] == "1.34"


def test_the_strict_helper_refuses_unknown_fields() -> None:
    schema = strict(
        {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {}}}}}
    )
    jsonschema.Draft7Validator(schema).validate({"a": {"b": 1}})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema).validate({"a": {"c": 1}})
    loose = strict(
        {"type": "object", "properties": {"a": {}}, "x-kubernetes-preserve-unknown-fields": True}
    )
    jsonschema.Draft7Validator(loose).validate({"z": 1})


def test_the_crd_validators_are_strict() -> None:
    require_shared()
    validator = crd_validator("inference.networking.k8s.io", "InferencePool", "v1")
    bad = {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": {"name": "p"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "targetPorts": [{"number": 8000, "name": "x"}],
            "endpointPickerRef": {"name": "e", "port": {"number": 9002}},
        },
    }
    assert list(validator.iter_errors(bad))


def test_the_crds_own_cel_rules_are_evaluated() -> None:
    require_shared()
    from modelplane.composition import compose_replica

    from .builders import cluster, manifests, replica
    from .schemas import validate_manifest

    objs = manifests(compose_replica(replica(), cluster()))
    pool = objs["inference-pool"]
    pool["spec"]["targetPorts"] = [{"number": 8000}, {"number": 8000}]
    with pytest.raises(AssertionError, match="port number must be unique"):
        validate_manifest(pool)
    route = objs["model-route"]
    route["spec"]["rules"][0]["filters"][0]["type"] = "RequestRedirect"
    with pytest.raises(AssertionError, match="urlRewrite must be nil"):
        validate_manifest(route)
