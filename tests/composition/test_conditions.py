"""ModelReplica conditions, events and readiness (docs/reconcile.md, "ModelReplica conditions"), and
endpoint gating (docs/reconcile.md, "Conditions, events and readiness").
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelplane.api import ModelReplica
from modelplane.api.meta import UNRESOLVED, is_ready
from modelplane.composition import (
    compose_replica,
    model_endpoint,
    provider_config_for,
)
from modelplane.runtime.wire import condition_wire, observed_objects

from .builders import PC, cluster, replica, replica_dict, standalone_engine

READY = {"type": "Ready", "status": "True", "reason": "Available"}
NOT_READY = {"type": "Ready", "status": "False", "reason": "Unavailable"}


def _observed(
    accepted: bool = True, ready: bool = True, engines: list[str] | None = None, others: bool = True
) -> dict[str, Any]:
    """Observed Objects as provider-kubernetes reports them, from a fresh composition."""
    composed = compose_replica(
        replica([standalone_engine(e) for e in engines or ["qwen3-8b"]]), cluster()
    )
    observed: dict[str, Any] = {}
    for o in composed.objects:
        if not others and not o.key.startswith("model-serving-"):
            continue
        obj = copy.deepcopy(o.object)
        obj["metadata"].update(uid="u-1", resourceVersion="42")
        obj["status"] = {
            "atProvider": {"manifest": obj["spec"]["forProvider"]["manifest"] if accepted else {}},
            "conditions": [READY if ready else NOT_READY],
        }
        observed[o.key] = obj
    return observed


def _cond(type_: str, status: str, reason: str, message: str = "") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def test_fresh_replica_is_deploying_and_waiting() -> None:
    result = compose_replica(replica(), cluster())
    assert [condition_wire(c) for c in result.conditions] == [
        _cond("ModelAccepted", "False", "Deploying"),
        _cond("ModelReady", "False", "WaitingForModel"),
    ]
    assert [e.message for e in result.events] == ["Composing vllm/vllm-openai:v0.23.0 on us-east-1"]
    assert result.ready is False


def test_accepted_but_not_available_is_starting() -> None:
    result = compose_replica(replica(), cluster(), observed_objects(_observed(ready=False)))
    assert [condition_wire(c) for c in result.conditions] == [
        _cond("ModelAccepted", "True", "Accepted"),
        _cond("ModelReady", "False", "ModelStarting"),
    ]
    assert result.events == []
    assert result.ready is False
    flags = {o.key: o.ready for o in result.objects}
    # Workloads and the picker Deployment wait for Ready; the rest count once observed.
    assert flags["model-serving-qwen3-8b"] is None
    assert flags["epp"] is None
    assert flags["epp-service"] is True
    assert flags["inference-pool"] is True


def test_every_workload_ready_is_serving_and_left_to_crossplane() -> None:
    result = compose_replica(replica(), cluster(), observed_objects(_observed()))
    assert [condition_wire(c) for c in result.conditions] == [
        _cond("ModelAccepted", "True", "Accepted"),
        _cond("ModelReady", "True", "Serving"),
    ]
    assert result.ready is None
    assert all(o.ready is True for o in result.objects)
    assert result.held is False


def test_objects_not_observed_yet_stay_unmarked() -> None:
    observed = _observed(others=False)
    result = compose_replica(replica(), cluster(), observed_objects(observed))
    flags = {o.key: o.ready for o in result.objects}
    assert flags["model-serving-qwen3-8b"] is True
    assert {k for k, v in flags.items() if v is None} == {o.key for o in result.objects} - {
        "model-serving-qwen3-8b"
    }


def test_every_workload_counts() -> None:
    two = [standalone_engine("a"), standalone_engine("b")]
    observed = _observed(engines=["a", "b"])
    observed["model-serving-b"]["status"] = {
        "atProvider": {"manifest": {}},
        "conditions": [NOT_READY],
    }
    result = compose_replica(replica(two), cluster(), observed_objects(observed))
    assert [c.reason for c in result.conditions] == ["Deploying", "WaitingForModel"]
    del observed["model-serving-b"]
    result = compose_replica(replica(two), cluster(), observed_objects(observed))
    assert [c.reason for c in result.conditions] == ["Deploying", "WaitingForModel"]
    # A workload is observed, so this is not the first compose: no event.
    assert result.events == []


# provider-kubernetes v1.2.1 when the API server refuses the apply (an immutable field): the
# Observe dry run fails, crossplane-runtime v2.0.0-rc.1 sets Synced=False ReconcileError with
# this message prefix, and Ready keeps the value it had (internal/controller/namespaced/
# object/object.go Observe; pkg/reconciler/managed/reconciler.go).
REFUSED = {
    "type": "Synced",
    "status": "False",
    "reason": "ReconcileError",
    "message": "observe failed: cannot get desired state: cannot dry run SSA: "
    "ResourceClaimTemplate.resource.k8s.io is invalid: spec: field is immutable",
}
SYNCED = {"type": "Synced", "status": "True", "reason": "ReconcileSuccess"}


def test_a_refused_object_is_not_accepted_and_says_why_but_keeps_serving() -> None:
    """Every Object reads Ready, but the claim template's update was refused: the replica
    still runs its old shape, so it is not accepted (never counted as updated), while it
    keeps serving what it ran: a sync failure takes nothing out of routing."""
    observed = _observed()
    key = "resource-claim-qwen3-8b-standalone"
    for obj in observed.values():
        obj["status"]["conditions"].append(SYNCED)
    observed[key]["status"]["conditions"] = [READY, REFUSED]
    name = observed[key]["metadata"]["name"]
    result = compose_replica(replica(), cluster(), observed_objects(observed))
    assert [condition_wire(c) for c in result.conditions] == [
        _cond(
            "ModelAccepted",
            "False",
            "NotSynced",
            f"Object {name} ({key}) is not synced: {REFUSED['message']}",
        ),
        _cond("ModelReady", "True", "Serving"),
    ]
    assert result.ready is None  # Crossplane derives Ready: the replica stays routed
    # Once the provider applies it, the replica is accepted again.
    observed[key]["status"]["conditions"] = [READY, SYNCED]
    result = compose_replica(replica(), cluster(), observed_objects(observed))
    assert [c.reason for c in result.conditions] == ["Accepted", "Serving"]
    assert result.ready is None


def test_every_refused_object_is_named_in_key_order() -> None:
    observed = _observed()
    keys = ["model-serving-qwen3-8b", "epp"]
    for key in keys:
        observed[key]["status"]["conditions"] = [NOT_READY, {**REFUSED, "message": ""}]
    result = compose_replica(replica(), cluster(), observed_objects(observed))
    accepted, ready = result.conditions
    assert (accepted.status, accepted.reason) == ("False", "NotSynced")
    assert accepted.message == "; ".join(
        f"Object {observed[k]['metadata']['name']} ({k}) is not synced: ReconcileError"
        for k in sorted(keys)
    )
    assert (ready.status, result.ready) == ("False", False)  # not Ready on its own account


@pytest.mark.parametrize(
    ("cluster_arg", "fetched", "message", "event"),
    [
        (
            None,
            False,
            "Waiting for InferenceCluster us-east-1",
            "Waiting for cluster to be resolved",
        ),
        (None, True, "InferenceCluster us-east-1 not found", "Waiting for cluster to be resolved"),
        (
            "no-pc",
            True,
            "InferenceCluster us-east-1 has no status.providerConfigRef yet",
            "Waiting for cluster providerConfigRef",
        ),
    ],
)
def test_unresolved_cluster_keeps_observed_objects(
    cluster_arg: str | None, fetched: bool, message: str, event: str
) -> None:
    observed = _observed()
    clu = cluster(provider_config=None) if cluster_arg == "no-pc" else None
    result = compose_replica(replica(), clu if fetched else UNRESOLVED, observed_objects(observed))
    assert result.held is True
    assert [o.key for o in result.objects] == list(observed)
    for composed in result.objects:
        seen = observed[composed.key]
        assert composed.object["apiVersion"] == seen["apiVersion"]
        assert composed.object["kind"] == seen["kind"]
        assert composed.object["spec"] == seen["spec"]
        assert composed.object["metadata"]["name"] == seen["metadata"]["name"]
        assert "status" not in composed.object
        assert "uid" not in composed.object["metadata"]
        assert composed.ready is True
    assert [condition_wire(c) for c in result.conditions] == [
        _cond("ModelAccepted", "False", "WaitingForCluster", message),
        _cond("ModelReady", "True", "Serving"),
    ]
    # A serving replica stays Ready through the blip.
    assert result.ready is None
    assert [(e.severity, e.message) for e in result.events] == [("Normal", event)]


def test_unresolved_cluster_with_nothing_observed_composes_nothing() -> None:
    result = compose_replica(replica(), UNRESOLVED, None)
    assert result.objects == []
    assert condition_wire(result.conditions[1]) == _cond("ModelReady", "False", "WaitingForModel")
    assert result.ready is False
    assert result.held is True


def test_render_derives_a_missing_provider_config() -> None:
    clu = cluster(provider_config=None)
    assert provider_config_for(clu) is None
    result = compose_replica(replica(), clu, derive_provider_config=True)
    assert not result.held
    # child_name("us-east-1", "cluster-kubeconfig") is the worked example's PC.
    assert {o.object["spec"]["providerConfigRef"]["name"] for o in result.objects} == {PC}
    assert provider_config_for(cluster()) == ("ClusterProviderConfig", PC)


def _with_status(conditions: list[dict[str, str]] | None) -> ModelReplica:
    data = replica_dict()
    if conditions is not None:
        data["status"] = {"conditions": conditions}
    return ModelReplica.model_validate(data)


def test_endpoint_only_for_a_ready_replica_with_a_gateway() -> None:
    desired = replica()
    ready = is_ready(_with_status([READY]).status)
    assert ready
    assert not is_ready(_with_status([NOT_READY]).status)
    assert not is_ready(_with_status(None).status)
    assert not is_ready(None)
    assert model_endpoint(desired, False, "203.0.113.10") is None
    assert model_endpoint(desired, True, None) is None
    assert model_endpoint(desired, True, "") is None
    endpoint = model_endpoint(desired, ready, "203.0.113.10")
    assert endpoint is not None
    assert endpoint.to_wire() == {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {
            "name": "qwen3-8b-e7f0a",
            "namespace": "ml-team",
            "labels": {
                "modelplane.ai/deployment": "qwen3-8b",
                "modelplane.ai/deployment-namespace": "ml-team",
                "modelplane.ai/cluster": "us-east-1",
                # Not modelplane.ai/remote-namespace, the replica's: where its objects are
                # on its cluster is no label of its endpoint (docs/api.md).
                "modelplane.ai/replica-index": "0",
            },
        },
        # The cluster's gateway is the origin; the replica's route there is the API
        # prefix; the model is the name the engine serves (<namespace>/<deployment>).
        "spec": {
            "origin": "http://203.0.113.10",
            "api": {"schema": "OpenAI", "prefix": "/ml-team/qwen3-8b-e7f0a/v1"},
            "model": "ml-team/qwen3-8b",
        },
    }
