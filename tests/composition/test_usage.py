"""The Usages that keep an InferenceCluster from being deleted (docs/reconcile.md, "Deletion
protection"): their shape against Crossplane's released CRD, their names, and the namespace
fact that makes them block at all.
"""

from __future__ import annotations

from typing import Any

from modelplane.api import ModelCache, ModelReplica
from modelplane.composition.usage import cache_usage, replica_usage
from modelplane.naming import replica_name
from tests.builders import model_cache, seed_replica
from tests.composition.schemas import validate_manifest


def _replica(cluster: str = "us-east-1", index: int = 0, name: str | None = None) -> ModelReplica:
    raw = seed_replica(cluster, index)
    if name is not None:
        raw["metadata"]["name"] = name
    return ModelReplica.model_validate(raw)


def _cache_usages(*clusters: str) -> list[dict[str, Any]]:
    """The Usages of a cache staged on ``clusters``, in cluster order."""
    cache = ModelCache.model_validate(model_cache())
    return [cache_usage(cache, c).to_wire() for c in sorted(clusters)]


def test_every_composed_usage_is_valid_against_the_released_crd() -> None:
    # protection.crossplane.io_usages.yaml of Crossplane v2.3.4, strict, with its CEL rules
    # ("either spec.by or spec.reason", "cross-namespace spec.of needs spec.by").
    longest = replica_name("d" * 63, "c" * 63, 99)
    usages = [
        replica_usage(_replica()).to_wire(),
        replica_usage(_replica("c" * 63, 99, longest)).to_wire(),
        *_cache_usages("us-east-1", "eu-west-1", "c" * 63),
    ]
    assert len(usages) == 5
    for usage in usages:
        validate_manifest(usage)
        assert len(usage["metadata"]["name"]) <= 63


def test_the_of_reference_names_the_cluster_in_the_empty_namespace() -> None:
    """A namespaced Usage blocks deleting a cluster-scoped object only with
    ``of.resourceRef.namespace: ""``.

    crossplane/crossplane v2.3.4 ``internal/protection/usage/finder.go``: ``NewFinder`` indexes
    a Usage under ``indexVal(apiVersion, kind, name, ptr.Deref(of.resourceRef.namespace,
    usage's namespace))``, and ``FindUsageOf``, which the deletion webhook
    (``internal/webhook/protection/usage/handler.go``) calls with the object being deleted,
    looks it up under that object's own namespace: empty for a cluster-scoped one.
    """

    def indexed_under(usage: dict[str, Any]) -> str:
        ref = usage["spec"]["of"]["resourceRef"]
        namespace = ref["namespace"] if "namespace" in ref else usage["metadata"]["namespace"]
        group = usage["spec"]["of"]["apiVersion"].split("/")[0]
        return f"{group}.{usage['spec']['of']['kind']}.{ref['name']}.{namespace}"

    deleted_cluster = "modelplane.ai.InferenceCluster.us-east-1."  # cluster-scoped: no namespace
    for usage in [replica_usage(_replica()).to_wire(), *_cache_usages("us-east-1")]:
        assert usage["metadata"]["namespace"] == "ml-team"
        assert usage["spec"]["of"]["resourceRef"] == {"name": "us-east-1", "namespace": ""}
        assert indexed_under(usage) == deleted_cluster
        # Without the explicit empty namespace it would be indexed under its own, and never
        # found when the cluster is deleted.
        del usage["spec"]["of"]["resourceRef"]["namespace"]
        assert indexed_under(usage) != deleted_cluster


def test_a_replica_usage_is_named_as_the_replica_so_the_refusal_names_it() -> None:
    # Crossplane's refusal (handler.go inUseMessage): 'This resource is in-use by 1 usage(s),
    # including the *v1beta1.Usage "<name>" (in namespace "<ns>") by resource <Kind>/<by>.'
    replica = _replica("us-east-1", 0, replica_name("qwen3-8b", "us-east-1", 0))
    usage = replica_usage(replica).to_wire()
    assert usage["metadata"]["name"] == replica.metadata.name
    assert usage["spec"]["by"] == {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "resourceRef": {"name": replica.metadata.name},
    }
    # The labels select every Usage holding a cluster: kubectl get usages -A -l
    # modelplane.ai/cluster=us-east-1.
    assert usage["metadata"]["labels"]["modelplane.ai/cluster"] == "us-east-1"


def test_a_cache_has_one_usage_per_cluster_named_after_both() -> None:
    first = _cache_usages("us-east-1", "eu-west-1")
    assert [u["spec"]["of"]["resourceRef"]["name"] for u in first] == ["eu-west-1", "us-east-1"]
    assert {u["spec"]["by"]["resourceRef"]["name"] for u in first} == {"qwen"}
    names = [u["metadata"]["name"] for u in first]
    assert all(n.startswith("qwen-") for n in names) and len(set(names)) == 2
    assert _cache_usages("us-east-1", "eu-west-1") == first  # deterministic
    assert first[1]["metadata"]["labels"] == {
        "modelplane.ai/cache": "qwen",
        "modelplane.ai/cache-namespace": "ml-team",
        "modelplane.ai/cluster": "us-east-1",
    }


def test_a_usage_only_blocks_the_cluster_never_its_user() -> None:
    # The webhook refuses deleting the Usage's ``of`` object only (FindUsageOf); ``by`` is the
    # replica or cache, so deleting either (or its ModelDeployment) is never blocked by it.
    for usage in [replica_usage(_replica()).to_wire(), *_cache_usages("us-east-1")]:
        assert usage["spec"]["of"]["kind"] == "InferenceCluster"
        assert usage["spec"]["by"]["kind"] in ("ModelReplica", "ModelCache")
        assert usage["spec"]["replayDeletion"] is True
