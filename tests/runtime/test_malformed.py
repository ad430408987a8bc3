"""Malformed requests: a located answer naming the problem, never a crash (docs/crossplane.md, "How
the function behaves").

A malformed composite is Fatal: the desired state passed in is passed back unchanged, and
Crossplane applies nothing. A malformed input of a valid composite keeps the held state
(every observed composed resource, the previous status and conditions) with a Warning,
so no observed object is ever deleted and no status is lost to a bad input.
"""

from __future__ import annotations

from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest
from google.protobuf import struct_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.runtime.crossplane.dispatch import run
from modelplane.runtime.crossplane.messages import FunctionRequest

from .conftest import Stubs
from .helpers import (
    composite_status,
    conditions,
    deployment,
    desired,
    direct,
    existing_cluster,
    fatal_messages,
    inference_class,
    model_cache,
    readiness,
    replica,
    request,
    results,
    to_dict,
)

EARLIER = {"replica-us-east-1-0": replica()}


def _fatal(stubs: Stubs, req: fnv1.RunFunctionRequest) -> str:
    rsp = stubs.v1.RunFunction(req)
    messages = fatal_messages(rsp)
    assert len(messages) == 1, results(rsp)
    # The desired state handed in comes back untouched: nothing is deleted.
    assert rsp.desired == req.desired
    return messages[0]


def _held(stubs: Stubs, req: fnv1.RunFunctionRequest) -> str:
    """A valid deployment with a malformed input: no Fatal, the held state, one Warning.

    Returns the problem, the Warning's text before ``; keeping <n> existing replicas``.
    """
    rsp = direct(req)
    assert fatal_messages(rsp) == []
    [(severity, message)] = results(rsp)
    assert severity == "WARNING"
    problem, _, kept = message.rpartition("; keeping ")
    observed = {k for k in req.observed.resources}
    assert kept == f"{len(observed)} existing replicas"
    # Every observed replica comes back, the malformed one included: nothing is deleted.
    assert observed <= set(desired(rsp))
    scheduled = [c for c in conditions(rsp) if c[0] == "ReplicasScheduled"]
    assert scheduled == [("ReplicasScheduled", "False", "InvalidInput", message)]
    return problem


def test_no_composite(stubs: Stubs) -> None:
    assert _fatal(stubs, request(None, desired=EARLIER)) == "unsupported composite resource /"


def test_foreign_composite(stubs: Stubs) -> None:
    xr = {"apiVersion": "example.org/v1", "kind": "XBucket", "metadata": {"name": "b"}}
    assert _fatal(stubs, request(xr)) == "unsupported composite resource example.org/v1/XBucket"


def test_unknown_kind_of_our_group(stubs: Stubs) -> None:
    xr = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelThing", "metadata": {"name": "b"}}
    assert (
        _fatal(stubs, request(xr))
        == "unsupported composite resource modelplane.ai/v1alpha1/ModelThing"
    )


def test_non_integer_replicas(stubs: Stubs) -> None:
    xr = deployment()
    xr["spec"]["replicas"] = 2.5
    assert _fatal(stubs, request(xr, desired=EARLIER)) == (
        "invalid ModelDeployment ml-team/qwen3-8b: spec.replicas: Invalid value: 2.5: must be of type integer"
    )


def test_integral_float_replicas_are_integers(stubs: Stubs) -> None:
    # 2.0 is what protobuf makes of 2: it must not be refused.
    rsp = stubs.v1.RunFunction(request(deployment(replicas=2), required={}))
    assert fatal_messages(rsp) == []


def test_out_of_bounds_composite(stubs: Stubs) -> None:
    assert _fatal(stubs, request(deployment(replicas=101))) == (
        "invalid ModelDeployment ml-team/qwen3-8b: spec.replicas: Invalid value: 101: "
        "must be less than or equal to 100"
    )


def test_wrong_kind_in_required_resources(stubs: Stubs) -> None:
    req = request(
        deployment(),
        required={"clusters": [model_cache()], "classes": [], "all-replicas": []},
        desired=EARLIER,
    )
    assert _held(stubs, req) == (
        "invalid required resource clusters: ModelCache ml-team/qwen: kind: Unsupported value: "
        '"ModelCache": supported values: "InferenceCluster"'
    )


def test_wrong_api_version_in_required_resources(stubs: Stubs) -> None:
    cluster = existing_cluster()
    cluster["apiVersion"] = "modelplane.ai/v2"
    req = request(replica(), required={"cluster": [cluster]})
    assert _kept(stubs, req) == (
        "invalid required resource cluster: InferenceCluster us-east-1: apiVersion: Unsupported value: "
        '"modelplane.ai/v2": supported values: "modelplane.ai/v1alpha1"'
    )


# An observed provider-kubernetes Object, Ready: what the replica, cache and cluster
# functions compose. Its integer survives the held re-emission as an integer.
HELD_OBJECT = {
    "apiVersion": "kubernetes.crossplane.io/v1alpha2",
    "kind": "Object",
    "metadata": {"name": "held-x", "uid": "uid-x"},
    "spec": {
        "forProvider": {"manifest": {"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 8000}]}}}
    },
    "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]},
}  # fmt: skip


def _kept(stubs: Stubs, req: fnv1.RunFunctionRequest) -> str:
    """A valid replica, cache or cluster with a malformed input: the held state, one Warning.

    Returns the problem, the Warning's text before ``; keeping <n> existing composed resources``.
    """
    rsp = direct(req)
    assert fatal_messages(rsp) == []
    [(severity, message)] = results(rsp)
    assert severity == "WARNING"
    problem, _, kept = message.rpartition("; keeping ")
    assert kept == f"{len(req.observed.resources)} existing composed resources"
    # Every observed composed resource comes back as desired (status dropped): nothing is deleted.
    out = desired(rsp)
    assert set(out) == set(req.observed.resources)
    for key in out:
        assert "status" not in out[key]
        assert out[key]["spec"] == to_dict(req.observed.resources[key].resource)["spec"]
    assert all(readiness(rsp)[key] == "READY_TRUE" for key in out)
    return problem


def _with_status(composite: dict[str, Any], **status: Any) -> dict[str, Any]:
    composite["status"] = status
    return composite


PREVIOUS_SYNCED = {"type": "Synced", "status": "True", "reason": "ReconcileSuccess"}


@pytest.mark.parametrize(
    ("composite", "required", "problem"),
    [
        pytest.param(
            _with_status(
                replica(),
                conditions=[
                    PREVIOUS_SYNCED,
                    {"type": "ModelReady", "status": "True", "reason": "Available", "message": "serving"},
                ],
            ),
            {"cluster": [dict(existing_cluster(), spec="garbage")]},
            "invalid required resource cluster: InferenceCluster us-east-1: spec: ",
            id="replica: its cluster",
        ),
        pytest.param(
            _with_status(
                model_cache(),
                conditions=[
                    PREVIOUS_SYNCED,
                    {"type": "ArtifactReady", "status": "True", "reason": "Staged", "message": "staged on us-east-1"},
                ],
                summary={"ready": "1/1"},
                clusters=[{"name": "us-east-1", "phase": "Ready", "source": "Qwen/Qwen3-8B@main"}],
            ),
            {"clusters": [existing_cluster(pools=[("h100", "h100-8x", 1.5)])]},  # type: ignore[list-item]
            "invalid required resource clusters: InferenceCluster us-east-1: spec.nodePools[0].nodeCount: "
            "Invalid value: 1.5: must be of type integer",
            id="cache: the fleet",
        ),
        pytest.param(
            _with_status(
                existing_cluster(),
                conditions=[
                    PREVIOUS_SYNCED,
                    {"type": "ClusterReady", "status": "True", "reason": "ClusterRunning"},
                ],
                gateway={"address": "203.0.113.10"},
                gpuPools=[{"name": "h100", "nodes": 1}],
            ),
            {"class-h100-8x": [dict(inference_class(), spec="garbage")]},
            "invalid required resource class-h100-8x: InferenceClass h100-8x: spec: ",
            id="cluster: its class",
        ),
    ],
)  # fmt: skip
def test_a_bad_input_keeps_status_and_composed_resources(
    stubs: Stubs, composite: dict[str, Any], required: dict[str, Any], problem: str
) -> None:
    # Only a malformed composite is Fatal. A bad required resource
    # keeps every observed Object, the previous status and the function's own conditions.
    req = request(composite, observed={"held-x": HELD_OBJECT}, required=required)
    assert _kept(stubs, req).startswith(problem)
    rsp = direct(req)
    previous = composite["status"]
    assert composite_status(rsp) == {k: v for k, v in previous.items() if k != "conditions"}
    own = [c for c in previous["conditions"] if c["type"] != "Synced"]
    assert conditions(rsp) == [
        (c["type"], c["status"], c["reason"], c.get("message", "")) for c in own
    ]


def test_a_bad_input_with_nothing_observed_holds_nothing(stubs: Stubs) -> None:
    # No previous status and nothing observed: nothing to carry, still no Fatal.
    req = request(replica(), required={"cluster": [dict(existing_cluster(), kind="ModelCache")]})
    assert _kept(stubs, req).startswith("invalid required resource cluster: ")
    rsp = stubs.v1.RunFunction(req)
    assert conditions(rsp) == []
    assert desired(rsp) == {}


def test_a_malformed_replica_composite_stays_fatal(stubs: Stubs) -> None:
    broken = replica()
    broken["spec"]["clusterName"] = 7
    assert _fatal(stubs, request(broken, observed={"held-x": HELD_OBJECT})).startswith(
        "invalid ModelReplica ml-team/qwen3-8b-e7f0a: spec.clusterName: "
    )


def test_invalid_required_cluster(stubs: Stubs) -> None:
    cluster = existing_cluster(pools=[("h100", "h100-8x", 1)])
    cluster["spec"]["nodePools"][0]["nodeCount"] = 1.5
    req = request(
        deployment(),
        required={"clusters": [cluster], "classes": [inference_class()], "all-replicas": []},
        desired=EARLIER,
    )
    assert _held(stubs, req) == (
        "invalid required resource clusters: InferenceCluster us-east-1: spec.nodePools[0].nodeCount: "
        "Invalid value: 1.5: must be of type integer"
    )


def test_invalid_observed_replica_is_kept_not_dropped(stubs: Stubs) -> None:
    broken = replica()
    broken["spec"]["engines"] = "garbage"
    req = request(deployment(), observed={"replica-us-east-1-0": broken}, desired=EARLIER)
    assert _held(stubs, req).startswith(
        "invalid observed resource replica-us-east-1-0: ModelReplica ml-team/qwen3-8b-e7f0a: spec.engines"
    )
    rsp = direct(req)
    assert desired(rsp)["replica-us-east-1-0"]["spec"]["engines"] == "garbage"  # as observed


def test_the_previous_status_survives_a_bad_input(stubs: Stubs) -> None:
    xr = deployment()
    xr["status"]["replicas"] = {"ready": 1, "total": 1}
    xr["status"]["conditions"].append(
        {"type": "ReplicasReady", "status": "True", "reason": "AllReplicasReady",
         "message": "1 of 1 ready", "lastTransitionTime": "2025-01-15T09:00:00Z"}
    )  # fmt: skip
    cluster = existing_cluster()
    cluster["spec"]["nodePools"][0]["nodeCount"] = 1.5
    required = {"clusters": [cluster], "classes": [], "all-replicas": []}
    rsp = stubs.v1.RunFunction(request(xr, observed=EARLIER, required=required))
    assert composite_status(rsp) == {"replicas": {"ready": 1, "total": 1}}
    assert conditions(rsp)[-1] == ("ReplicasReady", "True", "AllReplicasReady", "1 of 1 ready")
    assert conditions(rsp)[0][2] == "InvalidInput"


@pytest.mark.parametrize(
    "metadata",
    [[], "x", {"name": 7}, {"name": ["a"]}, {"labels": {"a": 1}}, {"name": None}],
)
def test_garbage_metadata(stubs: Stubs, metadata: Any) -> None:
    xr = deployment()
    xr["metadata"] = metadata
    assert _fatal(stubs, request(xr, desired=EARLIER)).startswith("invalid ModelDeployment ")


def test_composite_kind_not_a_string(stubs: Stubs) -> None:
    xr = {"apiVersion": "modelplane.ai/v1alpha1", "kind": ["ModelDeployment"]}
    assert (
        _fatal(stubs, request(xr))
        == 'unsupported composite resource modelplane.ai/v1alpha1/["ModelDeployment"]'
    )


def test_huge_lists(stubs: Stubs) -> None:
    xr = deployment()
    engine = xr["spec"]["template"]["spec"]["engines"][0]
    xr["spec"]["template"]["spec"]["engines"] = [dict(engine, name=f"e{i}") for i in range(5000)]
    assert _fatal(stubs, request(xr, desired=EARLIER)) == (
        "invalid ModelDeployment ml-team/qwen3-8b: spec.template.spec.engines: "
        "Too many: 5000: must have at most 8 items"
    )


def test_huge_required_list_of_garbage(stubs: Stubs) -> None:
    garbage = [
        {"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceCluster", "spec": i}
        for i in range(20000)
    ]
    req = request(deployment(), required={"clusters": garbage, "classes": [], "all-replicas": []})
    assert _held(stubs, req).startswith('invalid required resource clusters: InferenceCluster "": ')


def test_deeply_nested_struct(stubs: Stubs) -> None:
    xr = deployment()
    nested: dict[str, Any] = {}
    cursor = nested
    for _ in range(40):
        cursor["x"] = {}
        cursor = cursor["x"]
    xr["spec"]["crossplane"] = nested
    rsp = stubs.v1.RunFunction(request(xr, required={}))
    # Deeper than protobuf's decoder allows: answered with a Fatal result, not an RPC error.
    [message] = fatal_messages(rsp)
    assert message.startswith("malformed request: cannot decode RunFunctionRequest")


def test_nan_and_infinity(stubs: Stubs) -> None:
    req = request(deployment())
    req.observed.composite.resource["spec"]["replicas"] = float("nan")
    assert _fatal(stubs, req) == (
        "invalid ModelDeployment ml-team/qwen3-8b: spec.replicas: Invalid value: nan: must be of type integer"
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.recursive(
        st.none() | st.booleans() | st.floats(allow_nan=True) | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    ["apiVersion", "kind", "metadata", "spec", "status", "name", "replicas", "x"]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=25,
    ),
    st.sampled_from(
        [
            "ModelDeployment",
            "ModelReplica",
            "InferenceCluster",
            "InferenceClass",
            "ModelCache",
            "ModelEndpoint",
        ]
    ),
)
def test_any_garbage_gets_an_answer(garbage: Any, kind: str) -> None:
    composite = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": kind,
        "spec": garbage,
        "metadata": garbage,
    }
    required = {"clusters": [{"kind": "InferenceCluster", "spec": garbage}], "cluster": [garbage]}
    out = run(
        FunctionRequest(
            composite=composite, observed={"replica-a-0": {"spec": garbage}}, required=required
        )
    )  # type: ignore[dict-item]
    if out.fatal:
        assert out.resources == []
    assert not any(r.message.startswith("internal error") for r in out.results)


def test_struct_values_of_every_kind_are_read() -> None:
    struct = struct_pb2.Struct()
    struct.update({"a": None, "b": True, "c": 1, "d": "s", "e": [1, {"f": []}], "g": {}})
    from modelplane.runtime.crossplane.structs import struct_to_dict

    assert struct_to_dict(struct) == {
        "a": None,
        "b": True,
        "c": 1.0,
        "d": "s",
        "e": [1.0, {"f": []}],
        "g": {},
    }


def test_fatal_keeps_desired_resources_of_earlier_steps(stubs: Stubs) -> None:
    req = request({"apiVersion": "x/v1", "kind": "Y"}, desired=EARLIER)
    rsp = stubs.v1.RunFunction(req)
    assert desired(rsp) == {"replica-us-east-1-0": replica()}


def test_the_previous_progressing_survives_a_bad_input(stubs: Stubs) -> None:
    # A rollout's state is carried over like the rest, never dropped or reset.
    xr = deployment()
    stuck = {"type": "Progressing", "status": "False", "reason": "RolloutStuck",
             "message": "1 of 2 replicas updated; replica x not Ready within 1800s; the rollout is stopped",
             "lastTransitionTime": "2025-01-15T09:00:00Z"}  # fmt: skip
    xr["status"]["conditions"].append(stuck)
    cluster = existing_cluster()
    cluster["spec"]["nodePools"][0]["nodeCount"] = 1.5
    required = {"clusters": [cluster], "classes": [], "all-replicas": []}
    rsp = stubs.v1.RunFunction(request(xr, observed=EARLIER, required=required))
    assert conditions(rsp)[-1] == ("Progressing", "False", "RolloutStuck", stuck["message"])
