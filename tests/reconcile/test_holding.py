"""Decision 4: a transient fault never drops a running replica (docs/reconcile.md, "Conditions,
events and readiness").
"""

from __future__ import annotations

from modelplane.api import InferenceCluster, ModelDeployment, ModelEndpoint, ModelReplica
from modelplane.api.meta import UNRESOLVED
from modelplane.reconcile.deployment import DeploymentInputs, reconcile_deployment
from modelplane.runtime.local.render import render
from modelplane.runtime.wire import composed, condition_wire, replicas_wire
from modelplane.scheduling.model import CACHE_NONE, CACHE_UNRESOLVED, CacheState
from tests.reconcile.fleet import cluster, deployment, fleet, observed, observed_endpoint

TWO = [cluster("us-east-1"), cluster("us-west-2", gateway="203.0.113.20")]


def running() -> tuple[list[ModelReplica], list[ModelEndpoint]]:
    """Two ready replicas with their endpoints, as a reconcile would observe them."""
    first = render(fleet([deployment()], TWO))[0]
    fed = [observed(x, True) for x in first.replicas]
    second = render(fleet([deployment()], TWO, fed))[0]
    replicas = [ModelReplica.model_validate(r) for r in fed]
    endpoints = [ModelEndpoint.model_validate(observed_endpoint(e)) for e in second.endpoints]
    return replicas, endpoints


def inputs(
    dep: dict[str, object],
    clusters: list[InferenceCluster] | None,
    cache: CacheState = CACHE_NONE,
) -> DeploymentInputs:
    replicas, endpoints = running()
    return DeploymentInputs(
        deployment=ModelDeployment.model_validate(dep),
        clusters=UNRESOLVED if clusters is None else clusters,
        classes=[],
        cache=cache,
        observed_replicas=replicas,
        observed_endpoints=endpoints,
    )


def keys(objects: list[object]) -> list[str]:
    return [o.key for o in objects]  # type: ignore[attr-defined]


def test_clusters_not_fetched_yet_keeps_everything() -> None:
    result = reconcile_deployment(inputs(deployment(), None))
    assert keys(result.replicas) == ["replica-us-east-1-0", "replica-us-west-2-0"]
    assert keys(result.endpoints) == ["endpoint-us-east-1-0", "endpoint-us-west-2-0"]
    scheduled = condition_wire(result.status.conditions[0])
    assert (scheduled["reason"], scheduled["message"]) == (
        "ClustersUnresolved",
        "Waiting for InferenceClusters; keeping 2 existing replicas",
    )
    assert result.events == []  # it clears itself
    assert result.composite_ready is None  # derived from the kept replicas


def test_selector_that_no_longer_compiles_holds_the_placement() -> None:
    broken = deployment()
    broken["spec"]["template"]["spec"]["engines"][0]["members"][0]["nodeSelector"]["devices"][0][
        "selectors"
    ] = [{"cel": "device.count >= 1"}]
    clusters = [InferenceCluster.model_validate(c) for c in TWO]
    result = reconcile_deployment(inputs(broken, clusters))
    assert keys(result.replicas) == ["replica-us-east-1-0", "replica-us-west-2-0"]
    assert keys(result.endpoints) == ["endpoint-us-east-1-0", "endpoint-us-west-2-0"]
    scheduled = condition_wire(result.status.conditions[0])
    assert scheduled["reason"] == "InvalidNodeSelector"
    assert scheduled["message"].startswith("Invalid nodeSelector CEL expression: ")
    assert result.events[0].severity == "Warning"
    assert result.composite_ready is False
    # Held replicas keep their observed spec: the broken selector is not stamped onto them.
    cel = composed(result.replicas[0]).object["spec"]["engines"][0]["members"][0]["deviceRequests"][
        0
    ]["selectors"]
    assert cel[0]["cel"].startswith("device.capacity")


def test_unresolved_cache_places_nothing_new_and_keeps_what_runs() -> None:
    dep = deployment(replicas=3, modelCacheRef={"name": "qwen"})
    clusters = [InferenceCluster.model_validate(c) for c in TWO]
    result = reconcile_deployment(inputs(dep, clusters, CACHE_UNRESOLVED))
    assert keys(result.replicas) == ["replica-us-east-1-0", "replica-us-west-2-0"]
    cache_condition = condition_wire(result.status.conditions[0])
    assert (cache_condition["reason"], cache_condition["message"]) == (
        "ModelCacheUnresolved",
        "Waiting for ModelCache qwen",
    )


def test_pool_unknown_cluster_keeps_its_replica_as_observed() -> None:
    poolless = cluster("us-east-1")
    del poolless["status"]["gpuPools"]
    clusters = [InferenceCluster.model_validate(c) for c in (poolless, TWO[1])]
    result = reconcile_deployment(inputs(deployment(), clusters))
    assert keys(result.replicas) == ["replica-us-east-1-0", "replica-us-west-2-0"]
    assert replicas_wire(result.status) == {"ready": 2, "total": 2}


def test_ready_flags_follow_observed_readiness() -> None:
    clusters = [InferenceCluster.model_validate(c) for c in TWO]
    result = reconcile_deployment(inputs(deployment(), clusters))
    assert [r.ready for r in result.replicas] == [True, True]
    assert [e.ready for e in result.endpoints] == [True, True]


def test_held_objects_drop_what_crossplane_and_the_api_server_added() -> None:
    replicas, endpoints = running()
    stamped = []
    for r in replicas:
        wire = r.to_wire()
        wire["metadata"].update({"uid": "1234", "resourceVersion": "42"})
        wire["spec"]["crossplane"] = {"resourceRefs": [{"kind": "Object", "name": "x"}]}
        stamped.append(ModelReplica.model_validate(wire))
    held = DeploymentInputs(
        deployment=ModelDeployment.model_validate(deployment()),
        clusters=UNRESOLVED,
        classes=[],
        cache=CACHE_NONE,
        observed_replicas=stamped,
        observed_endpoints=endpoints,
    )
    result = reconcile_deployment(held)
    desired = [*map(composed, result.replicas), *map(composed, result.endpoints)]
    for obj in [o.object for o in desired]:
        assert set(obj["metadata"]) <= {"name", "namespace", "labels", "annotations"}
        assert "crossplane" not in obj["spec"]
        assert "status" not in obj
