"""The ModelCache function over gRPC: requirements, staging, the auth Secret."""

from __future__ import annotations

import copy
from typing import Any

from .conftest import Stubs
from .helpers import (
    composite_ready,
    composite_status,
    conditions,
    desired,
    direct,
    fatal_messages,
    model_cache,
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
TOKEN = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "hf-token", "namespace": "ml-team"},
    "data": {"HF_TOKEN": "c2VjcmV0"},
}


def _cache(auth: bool = False) -> dict[str, Any]:
    xr = model_cache()
    xr["spec"]["clusterSelector"] = {"matchLabels": {"tier": "gpu"}}
    if auth:
        xr["spec"]["huggingFace"]["authSecret"] = {"name": "hf-token"}
    return xr


def _twice(stubs: Stubs, xr: dict[str, Any], world: list[dict[str, Any]]) -> Any:
    first = stubs.v1.RunFunction(request(xr))
    return stubs.v1.RunFunction(request(xr, required=satisfy(first, world)))


def test_requirements_are_every_cluster_and_the_auth_secret(stubs: Stubs) -> None:
    rsp = direct(request(_cache(auth=True)))
    assert requirements(rsp) == {
        "clusters": {
            "api_version": "modelplane.ai/v1alpha1",
            "kind": "InferenceCluster",
            "match_labels": {},
        },
        "auth-secret": {
            "api_version": "v1",
            "kind": "Secret",
            "match_name": "hf-token",
            "namespace": "ml-team",
        },
    }
    # Nothing fetched yet: nothing composed, nothing deleted, not ready.
    assert desired(rsp) == {} and composite_ready(rsp) == "READY_FALSE"
    assert "auth-secret" not in requirements(stubs.v1.RunFunction(request(_cache())))


def test_first_call_keeps_what_is_observed(stubs: Stubs) -> None:
    staged = desired(_twice(stubs, _cache(), WORLD))
    observed = {k: {**v, "status": {"conditions": []}} for k, v in staged.items()}
    rsp = direct(request(_cache(), observed=observed))
    assert desired(rsp) == staged


def test_two_of_three_clusters_are_staged(stubs: Stubs) -> None:
    rsp = _twice(stubs, _cache(), WORLD)
    assert sorted(desired(rsp)) == [
        "cache-download-a",
        "cache-download-b",
        "cache-pvc-a",
        "cache-pvc-b",
    ]
    status = composite_status(rsp)
    assert status["summary"] == {"ready": "0/2"}
    assert [c["name"] for c in status["clusters"]] == ["a", "b"]
    assert conditions(rsp) == [
        ("ClustersMatched", "True", "Matched", "clusters: a, b"),
        ("ArtifactReady", "False", "Hydrating", "staging on a, b"),
    ]
    assert composite_ready(rsp) == "READY_FALSE"


def test_with_the_secret_the_token_is_delivered_by_reference(stubs: Stubs) -> None:
    rsp = _twice(stubs, _cache(auth=True), [*WORLD, TOKEN])
    got = desired(rsp)
    assert "cache-token-a" in got and "cache-download-a" in got
    assert "c2VjcmV0" not in str(got)
    assert got["cache-token-a"]["spec"]["references"][0]["patchesFrom"]["name"] == "hf-token"


def test_a_missing_secret_is_auth_secret_missing_and_composes_no_job(stubs: Stubs) -> None:
    for world in (WORLD, [*WORLD, {**copy.deepcopy(TOKEN), "data": {"OTHER": "eA=="}}]):
        rsp = _twice(stubs, _cache(auth=True), world)
        assert sorted(desired(rsp)) == ["cache-pvc-a", "cache-pvc-b"]
        assert conditions(rsp)[1] == (
            "ArtifactReady",
            "False",
            "AuthSecretMissing",
            "Secret ml-team/hf-token with key HF_TOKEN not found",
        )


def test_completed_jobs_make_the_cache_ready_and_are_dropped(stubs: Stubs) -> None:
    xr = _cache()
    first = _twice(stubs, xr, WORLD)
    observed = {}
    for key, obj in desired(first).items():
        seen = copy.deepcopy(obj)
        remote: dict[str, Any] = {"phase": "Bound"}
        if key.startswith("cache-download-"):
            remote = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
        # provider-kubernetes reports the whole remote object under atProvider.manifest.
        remote_object = {**obj["spec"]["forProvider"]["manifest"], "status": remote}
        seen["status"] = {
            "atProvider": {"manifest": remote_object},
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        observed[key] = seen
    xr["status"] = composite_status(first)
    second = stubs.v1.RunFunction(
        request(xr, observed=observed, required=satisfy(stubs.v1.RunFunction(request(xr)), WORLD))
    )
    assert sorted(desired(second)) == ["cache-pvc-a", "cache-pvc-b"]
    assert composite_status(second)["summary"] == {"ready": "2/2"}
    assert conditions(second)[1] == ("ArtifactReady", "True", "Staged", "staged on a, b")
    assert composite_ready(second) == "READY_TRUE"
    assert results(second) == [
        ("NORMAL", "Staged Qwen/Qwen3-8B@main on cluster a"),
        ("NORMAL", "Staged Qwen/Qwen3-8B@main on cluster b"),
    ]
    # The Job is gone (TTL): Ready is kept from the composite's own status.
    xr["status"] = composite_status(second)
    pvcs_only = {k: v for k, v in observed.items() if k.startswith("cache-pvc-")}
    third = stubs.v1.RunFunction(
        request(xr, observed=pvcs_only, required=satisfy(stubs.v1.RunFunction(request(xr)), WORLD))
    )
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
