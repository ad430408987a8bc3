"""The ModelReplica function over gRPC (docs/composition.md, "Objects, in order"; docs/reconcile.md,
"ModelReplica conditions").
"""

from __future__ import annotations

from typing import Any

from modelplane.api import InferenceCluster, ModelReplica
from modelplane.composition import compose_replica

from .conftest import Stubs
from .helpers import (
    PC,
    composite_ready,
    conditions,
    desired,
    direct,
    observed_object,
    readiness,
    replica,
    request,
    requirements,
    results,
    satisfy,
    worked_example_cluster,
)

KEYS = [
    "model-serving-qwen3-8b",
    "resource-claim-qwen3-8b-standalone",
    "inference-pool",
    "model-route",
    "epp",
    "epp-disruption-budget",
    "epp-service",
]
WORLD = [worked_example_cluster()]


def _compose(stubs: Stubs, observed: dict[str, Any] | None = None) -> Any:
    first = stubs.v1.RunFunction(request(replica(), observed=observed))
    return stubs.v1.RunFunction(
        request(replica(), observed=observed, required=satisfy(first, WORLD))
    )


def test_first_call_asks_for_the_cluster_and_composes_nothing(stubs: Stubs) -> None:
    rsp = direct(request(replica()))
    assert requirements(rsp) == {
        "cluster": {
            "api_version": "modelplane.ai/v1alpha1",
            "kind": "InferenceCluster",
            "match_name": "us-east-1",
        }
    }
    assert desired(rsp) == {}
    assert conditions(rsp) == [
        ("ModelAccepted", "False", "WaitingForCluster", "Waiting for InferenceCluster us-east-1"),
        ("ModelReady", "False", "WaitingForModel", ""),
    ]
    assert results(rsp) == [("NORMAL", "Waiting for cluster to be resolved")]
    assert composite_ready(rsp) == "READY_FALSE"


def test_composes_the_worked_example(stubs: Stubs) -> None:
    rsp = _compose(stubs)
    objects = desired(rsp)
    assert list(objects) == KEYS or sorted(objects) == sorted(KEYS)
    assert (
        objects["model-serving-qwen3-8b"]["metadata"]["name"]
        == "qwen3-8b-e7f0a-model-serving-qwen3-8b-43f12"
    )
    assert objects["epp-service"]["metadata"]["name"] == "qwen3-8b-e7f0a-epp-service-7fd25"
    for obj in objects.values():
        assert obj["spec"]["providerConfigRef"] == {"kind": "ClusterProviderConfig", "name": PC}
    manifest = objects["model-serving-qwen3-8b"]["spec"]["forProvider"]["manifest"]
    assert manifest["metadata"]["name"] == "ml-team-qwen3-8b-e7f0a-qwen3-8b-ee4f4"
    assert manifest["spec"]["replicas"] == 1
    assert set(readiness(rsp).values()) == {"READY_UNSPECIFIED"}
    assert conditions(rsp) == [
        ("ModelAccepted", "False", "Deploying", ""),
        ("ModelReady", "False", "WaitingForModel", ""),
    ]
    assert results(rsp) == [("NORMAL", "Composing vllm/vllm-openai:v0.23.0 on us-east-1")]
    assert composite_ready(rsp) == "READY_FALSE"


def test_same_objects_as_the_pure_composition(stubs: Stubs) -> None:
    rsp = _compose(stubs)
    pure = compose_replica(
        ModelReplica.model_validate(replica()),
        InferenceCluster.model_validate(worked_example_cluster()),
    )
    assert desired(rsp) == {o.key: o.object for o in pure.objects}


def test_readiness_once_observed(stubs: Stubs) -> None:
    composed = desired(_compose(stubs))
    observed = {key: observed_object(obj, ready=True) for key, obj in composed.items()}
    observed["epp"] = observed_object(composed["epp"], ready=False)
    rsp = _compose(stubs, observed)
    flags = readiness(rsp)
    assert flags["model-serving-qwen3-8b"] == "READY_TRUE"
    assert flags["inference-pool"] == "READY_TRUE"
    assert flags["epp"] == "READY_UNSPECIFIED"  # the picker must be Available first
    assert conditions(rsp) == [
        ("ModelAccepted", "True", "Accepted", ""),
        ("ModelReady", "True", "Serving", ""),
    ]
    assert composite_ready(rsp) == "READY_UNSPECIFIED"
    assert results(rsp) == []


def test_cluster_gone_keeps_every_observed_object(stubs: Stubs) -> None:
    composed = desired(_compose(stubs))
    observed = {key: observed_object(obj, ready=True) for key, obj in composed.items()}
    rsp = stubs.v1.RunFunction(request(replica(), observed=observed, required={"cluster": []}))
    kept = desired(rsp)
    assert sorted(kept) == sorted(KEYS)
    for key, obj in kept.items():
        assert obj["spec"] == composed[key]["spec"]
        assert obj["kind"] == "Object"
    assert conditions(rsp)[0] == (
        "ModelAccepted",
        "False",
        "WaitingForCluster",
        "InferenceCluster us-east-1 not found",
    )
    assert conditions(rsp)[1] == ("ModelReady", "True", "Serving", "")
    assert readiness(rsp)["model-serving-qwen3-8b"] == "READY_TRUE"


def test_observed_integers_survive_the_struct_trip(stubs: Stubs) -> None:
    # Held objects are re-emitted: their replicas and ports must be integers again.
    composed = desired(_compose(stubs))
    observed = {key: observed_object(obj, ready=True) for key, obj in composed.items()}
    from modelplane.runtime.crossplane.proto import request_from_proto
    from modelplane.runtime.crossplane.replica_fn import run_replica

    req = request_from_proto(request(replica(), observed=observed, required={"cluster": []}))
    out = run_replica(req)
    workload = next(r for r in out.resources if r.key == "model-serving-qwen3-8b")
    assert type(workload.object["spec"]["forProvider"]["manifest"]["spec"]["replicas"]) is int
