"""Requirement keys and selectors (docs/crossplane.md, "How the function behaves")."""

from __future__ import annotations

from modelplane.api import InferenceCluster, ModelDeployment, ModelReplica
from modelplane.runtime.crossplane.messages import Requirement
from modelplane.runtime.crossplane.requirements import (
    cluster_requirements,
    deployment_requirements,
    fetched,
    replica_requirements,
)

from .helpers import deployment, existing_cluster


def _deployment(**kwargs: object) -> ModelDeployment:
    return ModelDeployment.model_validate(deployment(**kwargs))  # type: ignore[arg-type]


def test_deployment_declares_clusters_and_classes_and_no_replica() -> None:
    # No ModelReplica lookup; others' capacity comes in each cluster's occupancy.
    assert deployment_requirements(_deployment()) == [
        Requirement("clusters", "InferenceCluster"),
        Requirement("classes", "InferenceClass"),
    ]


def test_deployment_with_a_cache_looks_it_up_by_name_in_its_namespace() -> None:
    reqs = deployment_requirements(_deployment(cache="qwen"))
    assert reqs[-1] == Requirement("cache", "ModelCache", match_name="qwen", namespace="ml-team")


def test_parked_deployment_looks_nothing_up() -> None:
    assert deployment_requirements(_deployment(replicas=0, cache="qwen")) == []


def test_replica_looks_up_its_cluster_by_name() -> None:
    replica = ModelReplica.model_validate(
        {
            "metadata": {"name": "r", "namespace": "ml-team"},
            "spec": {
                "clusterName": "us-east-1",
                "engines": [
                    {
                        "name": "e",
                        "members": [
                            {
                                "nodePoolName": "h100",
                                "template": {
                                    "spec": {"containers": [{"name": "engine", "image": "i"}]}
                                },
                            }
                        ],
                    }
                ],
            },
        }
    )
    assert replica_requirements(replica) == [
        Requirement("cluster", "InferenceCluster", match_name="us-east-1")
    ]


def test_cluster_declares_one_class_key_per_distinct_class_sorted_then_its_replicas() -> None:
    cluster = InferenceCluster.model_validate(
        existing_cluster(pools=[("b", "zeta", 1), ("a", "alpha", 1), ("c", "zeta", 2)])
    )
    assert cluster_requirements(cluster) == [
        Requirement("class-alpha", "InferenceClass", match_name="alpha"),
        Requirement("class-zeta", "InferenceClass", match_name="zeta"),
        # Every namespace's replicas pinned to it by label (no namespace on the selector).
        Requirement(
            "replicas", "ModelReplica", match_labels=(("modelplane.ai/cluster", "us-east-1"),)
        ),
        # Every TelemetryDestination and MetricMapping: its collector (docs/telemetry.md).
        Requirement("telemetry-destinations", "TelemetryDestination"),
        Requirement("metric-mappings", "MetricMapping"),
    ]


def test_absent_key_is_not_fetched_and_empty_is_fetched_none() -> None:
    assert fetched({}, "clusters") is None
    assert fetched({"clusters": []}, "clusters") == []
