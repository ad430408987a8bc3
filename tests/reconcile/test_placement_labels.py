"""A cluster's placement labels mark what is placed on it, so a service can select by region."""

from __future__ import annotations

from typing import Any

from tests.reconcile.feedback import World
from tests.reconcile.fleet import cluster, deployment


def _placed(name: str, region: str) -> dict[str, Any]:
    out = cluster(name)
    out["spec"]["placement"] = {"metadata": {"labels": {"region": region, "tier": "gold"}}}
    return out


def _regional_service(region: str) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelService",
        "metadata": {"name": f"qwen3-8b-{region}", "namespace": "ml-team"},
        "spec": {
            "endpoints": [
                {
                    "selector": {
                        "matchLabels": {"modelplane.ai/deployment": "qwen3-8b", "region": region}
                    }
                }
            ]
        },
    }


def _settled(*clusters: dict[str, Any], **template: Any) -> World:
    d = deployment(2)
    d["spec"]["template"].setdefault("metadata", {})["labels"] = {"region": "template", **template}
    world = World([d], list(clusters))
    world.settle()
    return world


def test_replicas_and_endpoints_carry_their_clusters_placement_labels() -> None:
    world = _settled(_placed("us-east-1", "us-east"), _placed("eu-west-1", "eu-west"))
    by_cluster = {r["spec"]["clusterName"]: r["metadata"]["labels"] for r in world.replicas}
    assert set(by_cluster) == {"us-east-1", "eu-west-1"}
    for name, region in (("us-east-1", "us-east"), ("eu-west-1", "eu-west")):
        labels = by_cluster[name]
        # The cluster's word on where it runs wins over the template's label of that key...
        assert (labels["region"], labels["tier"]) == (region, "gold")
        # ...and never over a managed label.
        assert labels["modelplane.ai/cluster"] == name
    for endpoint in world.endpoints:
        cluster_name = endpoint["metadata"]["labels"]["modelplane.ai/cluster"]
        assert endpoint["metadata"]["labels"]["region"] == by_cluster[cluster_name]["region"]


def test_a_service_selects_one_regions_endpoints() -> None:
    world = _settled(_placed("us-east-1", "us-east"), _placed("eu-west-1", "eu-west"))
    routes = world.compose_routes([_regional_service("eu-west")])
    (backends,) = routes.values()
    clusters = {
        e["metadata"]["name"]: e["metadata"]["labels"]["modelplane.ai/cluster"]
        for e in world.endpoints
    }
    assert len(backends) == 1
    assert [c for n, c in clusters.items() if any(n in b for b in backends)] == ["eu-west-1"]


def test_without_placement_labels_the_template_labels_stay() -> None:
    world = _settled(cluster("us-east-1"), cluster("eu-west-1"))
    assert {r["metadata"]["labels"]["region"] for r in world.replicas} == {"template"}
