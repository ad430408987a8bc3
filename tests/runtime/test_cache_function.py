"""The ModelCache function over gRPC: requirements, staging, the auth Secret."""

from __future__ import annotations

import base64
import copy
from typing import Any

from google.protobuf import json_format

from .conftest import Stubs
from .helpers import (
    composite_ready,
    composite_status,
    conditions,
    desired,
    direct,
    fatal_messages,
    model_cache,
    readiness,
    ready_cluster,
    request,
    requirements,
    results,
    satisfy,
)


def _cluster(name: str, tier: str) -> dict[str, Any]:
    c = ready_cluster(name)
    c["metadata"]["labels"] = {"tier": tier}
    c["spec"]["cluster"]["existing"]["cache"] = {"storageClassName": "rwx"}
    return c


WORLD = [_cluster("a", "gpu"), _cluster("b", "gpu"), _cluster("c", "cpu")]
# A recognisable token, in a control-plane Secret of the cache's namespace: what a user of an
# earlier release would have there. Nothing the function answers may carry it.
TOKEN_VALUE = "hf_modelplaneTestTokenDoNotLeak"
TOKEN_B64 = base64.b64encode(TOKEN_VALUE.encode()).decode()
TOKEN = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "hf-token", "namespace": "ml-team"},
    "data": {"HF_TOKEN": TOKEN_B64},
}


def _cache(auth: bool = False) -> dict[str, Any]:
    xr = model_cache()
    xr["spec"]["clusterSelector"] = {"matchLabels": {"tier": "gpu"}}
    if auth:
        xr["spec"]["huggingFace"]["authSecret"] = {"name": "hf-token"}
    return xr


def _twice(
    stubs: Stubs,
    xr: dict[str, Any],
    world: list[dict[str, Any]],
    observed: dict[str, dict[str, Any]] | None = None,
) -> Any:
    first = stubs.v1.RunFunction(request(xr, observed=observed))
    return stubs.v1.RunFunction(request(xr, observed=observed, required=satisfy(first, world)))


def _as_observed(
    composed: dict[str, dict[str, Any]], remote_status: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Composed Objects as provider-kubernetes reports them once applied: each remote object
    under ``status.atProvider.manifest`` with a UID and the status given by key prefix; a
    Usage as Crossplane's usage controller marks it."""
    observed = {}
    for key, obj in composed.items():
        seen = copy.deepcopy(obj)
        if obj["kind"] == "Usage":
            seen["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
            observed[key] = seen
            continue
        remote = copy.deepcopy(obj["spec"]["forProvider"]["manifest"])
        remote["metadata"]["uid"] = f"uid-{key}"
        for prefix, status in remote_status.items():
            if key.startswith(prefix):
                remote["status"] = status
        seen["status"] = {
            "atProvider": {"manifest": remote},
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        observed[key] = seen
    return observed


def _leaks(rsp: Any) -> list[str]:
    """Where the token (plain or base64) occurs in the answer outside a Secret manifest."""
    found = []
    for key, obj in desired(rsp).items():
        manifest = obj.get("spec", {}).get("forProvider", {}).get("manifest", {})
        if obj.get("kind") == "Secret" or manifest.get("kind") == "Secret":
            found.append(f"{key}: a Secret is composed at all")
        if TOKEN_VALUE in str(obj) or TOKEN_B64 in str(obj):
            found.append(key)
    rest = rsp.SerializeToString()
    rest_text = json_format.MessageToJson(rsp)
    if TOKEN_VALUE.encode() in rest or TOKEN_B64 in rest_text:
        found.append("response")
    return found


def test_requirements_are_every_cluster_and_never_a_secret(stubs: Stubs) -> None:
    for xr in (_cache(auth=True), _cache()):
        # Over gRPC a first call is answered with the requirements alone.
        assert requirements(stubs.v1.RunFunction(request(xr))) == requirements(direct(request(xr)))
        rsp = direct(request(xr))
        assert requirements(rsp) == {
            "clusters": {
                "api_version": "modelplane.ai/v1alpha1",
                "kind": "InferenceCluster",
                "match_labels": {},
            }
        }
        # Nothing fetched yet: nothing composed, nothing deleted, not ready.
        assert desired(rsp) == {} and composite_ready(rsp) == "READY_FALSE"


def test_first_call_keeps_what_is_observed(stubs: Stubs) -> None:
    staged = desired(_twice(stubs, _cache(), WORLD))
    observed = {k: {**v, "status": {"conditions": []}} for k, v in staged.items()}
    rsp = direct(request(_cache(), observed=observed))
    assert desired(rsp) == staged


def test_two_of_three_clusters_are_staged(stubs: Stubs) -> None:
    rsp = _twice(stubs, _cache(), WORLD)
    # First the Job's owner; the Job follows once the owner's UID is observed.
    keys = sorted(desired(rsp))
    assert [k for k in keys if not k.startswith("cache-owner-")] == [
        "cache-pvc-a",
        "cache-pvc-b",
        "usage-a",  # a Usage per cluster staged on: neither is deleted under the weights
        "usage-b",
    ]
    assert [k[-2:] for k in keys if k.startswith("cache-owner-")] == ["-a", "-b"]
    status = composite_status(rsp)
    assert status["summary"] == {"ready": "0/2"}
    assert [c["name"] for c in status["clusters"]] == ["a", "b"]
    assert conditions(rsp) == [
        ("ClustersMatched", "True", "Matched", "clusters: a, b"),
        ("ArtifactReady", "False", "Hydrating", "staging on a, b"),
    ]
    assert composite_ready(rsp) == "READY_FALSE"


def test_the_job_is_owned_and_its_object_never_deletes_it(stubs: Stubs) -> None:
    xr = _cache(auth=True)
    first = desired(_twice(stubs, xr, WORLD))
    rsp = _twice(stubs, xr, WORLD, _as_observed(first, {}))
    job = desired(rsp)["cache-download-a"]
    manifest = job["spec"]["forProvider"]["manifest"]
    [owner_key] = [k for k in first if k.startswith("cache-owner-") and k.endswith("-a")]
    # The owner reference names the ConfigMap by the UID the provider reported.
    assert manifest["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": first[owner_key]["spec"]["forProvider"]["manifest"]["metadata"]["name"],
            "uid": f"uid-{owner_key}",
        }
    ]
    # No Delete: provider-kubernetes v1.2.1 would delete the Job without a propagation
    # policy, which orphans a batch/v1 Job's pods (docs/composition.md,
    # "What a ModelCache composes").
    assert job["spec"]["managementPolicies"] == ["Observe", "Create", "Update", "LateInitialize"]
    assert "managementPolicies" not in desired(rsp)[owner_key]["spec"]
    assert "managementPolicies" not in desired(rsp)["cache-pvc-a"]["spec"]


def test_no_answer_carries_the_token(stubs: Stubs) -> None:
    """Through every stage, with the token in the cache's namespace and an earlier release's
    token Object (the token copied into its spec) observed: no answer carries it."""
    xr = _cache(auth=True)
    world = [*WORLD, TOKEN]
    legacy = {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": "qwen-a-token", "namespace": "ml-team"},
        "spec": {
            "forProvider": {
                "manifest": {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "ml-team-qwen-hf-token", "namespace": "default"},
                    "data": {"HF_TOKEN": TOKEN_B64},
                }
            }
        },
        "status": {"atProvider": {"manifest": {"data": {"HF_TOKEN": TOKEN_B64}}}},
    }
    held = stubs.v1.RunFunction(request(xr, observed={"cache-token-a": legacy}))
    assert _leaks(held) == [] and "cache-token-a" not in desired(held)
    fresh = _twice(stubs, xr, world, {"cache-token-a": legacy})
    assert _leaks(fresh) == [] and "cache-token-a" not in desired(fresh)
    owned = _twice(stubs, xr, world, _as_observed(desired(fresh), {}))
    assert "cache-download-a" in desired(owned) and _leaks(owned) == []
    done = {"cache-download-": {"conditions": [{"type": "Complete", "status": "True"}]}}
    staged = _twice(stubs, xr, world, _as_observed(desired(owned), done))
    assert composite_status(staged)["summary"] == {"ready": "2/2"} and _leaks(staged) == []


def test_completed_jobs_make_the_cache_ready_and_are_dropped(stubs: Stubs) -> None:
    xr = _cache()
    owners = _twice(stubs, xr, WORLD)
    first = _twice(stubs, xr, WORLD, _as_observed(desired(owners), {}))
    assert "cache-download-a" in desired(first)
    observed = _as_observed(
        desired(first),
        {
            "cache-pvc-": {"phase": "Bound"},
            "cache-download-": {
                "succeeded": 1,
                "conditions": [{"type": "Complete", "status": "True"}],
            },
        },
    )
    xr["status"] = composite_status(first)
    second = _twice(stubs, xr, WORLD, observed)
    # The Job's Object and its owner go: the owner's deletion takes the Job and its pods.
    # The weights stay, and with them the Usage of each cluster.
    assert sorted(desired(second)) == ["cache-pvc-a", "cache-pvc-b", "usage-a", "usage-b"]
    assert composite_status(second)["summary"] == {"ready": "2/2"}
    assert conditions(second)[1] == ("ArtifactReady", "True", "Staged", "staged on a, b")
    assert composite_ready(second) == "READY_TRUE"
    assert results(second) == [
        ("NORMAL", "Staged Qwen/Qwen3-8B@main on cluster a"),
        ("NORMAL", "Staged Qwen/Qwen3-8B@main on cluster b"),
    ]
    # The Job is gone: Ready is kept from the composite's own status.
    xr["status"] = composite_status(second)
    pvcs_only = {k: v for k, v in observed.items() if k.startswith(("cache-pvc-", "usage-"))}
    third = _twice(stubs, xr, WORLD, pvcs_only)
    assert composite_status(third)["summary"] == {"ready": "2/2"} and results(third) == []


def test_a_cache_without_hugging_face_is_a_fatal_result(stubs: Stubs) -> None:
    xr = _cache()
    del xr["spec"]["huggingFace"]
    rsp = stubs.v1.RunFunction(request(xr))
    assert fatal_messages(rsp) == [
        "invalid ModelCache ml-team/qwen: spec: spec.huggingFace is required when spec.source "
        "is HuggingFace."
    ]
    assert desired(rsp) == {}


def test_each_staged_cluster_has_a_usage_that_goes_with_its_staging(stubs: Stubs) -> None:
    # docs/reconcile.md, "Deletion protection": a cluster is not deleted while a cache stages
    # weights on it; the Usage lives in the cache's namespace and names the cache.
    rsp = _twice(stubs, _cache(), WORLD)
    usage = desired(rsp)["usage-a"]
    assert usage["metadata"]["namespace"] == "ml-team"
    assert usage["metadata"]["labels"] == {
        "modelplane.ai/cache": "qwen",
        "modelplane.ai/cache-namespace": "ml-team",
        "modelplane.ai/cluster": "a",
    }
    assert usage["spec"] == {
        "of": {
            "apiVersion": "modelplane.ai/v1alpha1",
            "kind": "InferenceCluster",
            "resourceRef": {"name": "a", "namespace": ""},
        },
        "by": {
            "apiVersion": "modelplane.ai/v1alpha1",
            "kind": "ModelCache",
            "resourceRef": {"name": "qwen"},
        },
        "replayDeletion": True,
    }
    assert usage["metadata"]["name"] != desired(rsp)["usage-b"]["metadata"]["name"]
    assert readiness(rsp)["usage-a"] == "READY_UNSPECIFIED"  # not observed yet
    observed = _as_observed(desired(rsp), {})
    assert readiness(_twice(stubs, _cache(), WORLD, observed))["usage-a"] == "READY_TRUE"
    # Cluster a leaves the selector: its staging and its Usage go in the same answer.
    moved = [_cluster("a", "cpu"), *WORLD[1:]]
    left = desired(_twice(stubs, _cache(), moved, observed))
    assert not [k for k in left if k.endswith("-a")]
    assert "usage-b" in left and "cache-pvc-b" in left
