"""A replica reads nothing but its spec: its deployment stamps what the replica's composition
reads of its InferenceCluster into ``spec.clusterInfo`` (docs/api.md, "ModelReplica:
clusterInfo"; docs/crossplane.md, "Answers that stay true longer").
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.api import InferenceCluster, ModelReplica
from modelplane.composition import compose_replica
from modelplane.composition.replica import cluster_info
from modelplane.naming import TEMPLATE_HASH_LABEL, replica_name
from modelplane.runtime.crossplane.freshness import SETTLED_TTL
from tests.builders import gpu_device, gpu_pool

from .helpers import (
    conditions,
    deployment,
    desired,
    direct,
    inference_class,
    readiness,
    ready_cluster,
    replica,
    request,
    requirements,
    results,
    satisfy,
    stamped,
)

CLUSTER = ready_cluster("us-east-1")
WORLD: list[dict[str, Any]] = [CLUSTER, inference_class()]


def _reconcile(xr: dict[str, Any], world: list[dict[str, Any]], **kw: Any) -> Any:
    first = direct(request(xr, **kw))
    return direct(request(xr, required=satisfy(first, world), **kw))


def _replicas(rsp: Any) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in desired(rsp).items() if k.startswith("replica-")}


def _info(obj: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
    model = ModelReplica.model_validate(obj)
    return cluster_info(model, InferenceCluster.model_validate(cluster)).to_wire()


def test_the_deployment_stamps_what_each_replica_reads_of_its_cluster() -> None:
    replicas = _replicas(_reconcile(deployment(), WORLD))
    assert len(replicas) == 2
    for obj in replicas.values():
        assert obj["spec"]["clusterInfo"] == {
            "providerConfigRef": {
                "kind": "ClusterProviderConfig",
                "name": "us-east-1-cluster-kubeconfig-x",
            },
            "stack": "Standard",
            "nodePools": [{"name": "h100", "drivers": ["gpu.nvidia.com"]}],
        }


def _observed(ready: bool, stamp: Callable[[dict[str, Any]], None]) -> dict[str, dict[str, Any]]:
    """The replicas the deployment wrote, observed with ``stamp`` applied to each spec."""
    out: dict[str, dict[str, Any]] = {}
    for key, obj in _replicas(_reconcile(deployment(), WORLD)).items():
        seen = copy.deepcopy(obj)
        stamp(seen["spec"])
        if ready:
            seen["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "x"}]}
        out[key] = seen
    return out


def _stale(spec: dict[str, Any]) -> None:
    spec["clusterInfo"] = {"stack": "Standard", "gatewayImplementation": "Istio"}


def _unstamped(spec: dict[str, Any]) -> None:
    spec.pop("clusterInfo")  # written by an older release


STAMPS = [
    pytest.param(_stale, id="stale: no provider config then, another gateway"),
    pytest.param(_unstamped, id="an older release's replica"),
]


@pytest.mark.parametrize("stamp", STAMPS)
def test_a_changed_stamp_updates_the_replica_in_place_and_rolls_nothing(
    stamp: Callable[[dict[str, Any]], None],
) -> None:
    observed = _observed(True, stamp)
    rsp = _reconcile(deployment(), WORLD, observed=observed)
    replicas = _replicas(rsp)
    # The same replicas under the same names and revision: nothing placed anew, nothing
    # superseded, the rollout complete and the deployment settled.
    assert sorted(replicas) == sorted(observed)
    for key, obj in replicas.items():
        before = observed[key]
        assert obj["metadata"]["name"] == before["metadata"]["name"]
        labels = obj["metadata"]["labels"]
        assert labels[TEMPLATE_HASH_LABEL] == before["metadata"]["labels"][TEMPLATE_HASH_LABEL]
        assert {k: v for k, v in obj["spec"].items() if k != "clusterInfo"} == {
            k: v for k, v in before["spec"].items() if k != "clusterInfo"
        }
        assert obj["spec"]["clusterInfo"] == _info(obj, CLUSTER)  # refreshed
        assert readiness(rsp)[key] == "READY_TRUE"
        assert "annotations" not in obj["metadata"]  # nothing waits for Ready
    assert ("Progressing", "True", "RolloutComplete", "2 of 2 replicas updated") in conditions(rsp)
    assert results(rsp) == []
    assert rsp.meta.ttl.ToTimedelta() == SETTLED_TTL


def test_a_replica_whose_cluster_is_not_fetched_keeps_its_stamp() -> None:
    observed = _observed(True, _stale)
    # Nothing fetched yet: the deployment holds and re-emits its replicas as they are.
    rsp = direct(request(deployment(), observed=observed))
    assert requirements(rsp)  # still asking
    held = _replicas(_reconcile(deployment(), [inference_class()], observed=observed))
    for key, obj in held.items():
        assert obj["spec"]["clusterInfo"] == observed[key]["spec"]["clusterInfo"]


def _cluster(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    out = copy.deepcopy(CLUSTER)
    edit(out)
    return out


def _declared_gateway(c: dict[str, Any]) -> None:
    c["spec"]["gateway"] = {"implementation": "Istio"}


def _observed_gateway(c: dict[str, Any]) -> None:
    c["status"]["gateway"]["implementation"] = "EnvoyGateway"


def _dynamo(c: dict[str, Any]) -> None:
    c["spec"]["stack"] = "Dynamo"


def _amd_pool(c: dict[str, Any]) -> None:
    amd = gpu_device(name="mi300", driver="gpu.amd.com", device_class="gpu.amd.com")
    c["status"]["gpuPools"] = [gpu_pool("h100", 1, gpu_device(), amd)]


def _other_pool_only(c: dict[str, Any]) -> None:
    c["status"]["gpuPools"] = [gpu_pool("l4", 1, gpu_device(driver="dra.cpu"))]


def _no_provider_config(c: dict[str, Any]) -> None:
    del c["status"]["providerConfigRef"]


CLUSTERS = [
    pytest.param(CLUSTER, id="ready"),
    pytest.param(_cluster(_declared_gateway), id="gateway declared"),
    pytest.param(_cluster(_observed_gateway), id="gateway observed"),
    pytest.param(_cluster(_dynamo), id="Dynamo stack"),
    pytest.param(_cluster(_amd_pool), id="its pool's drivers"),
    pytest.param(_cluster(_other_pool_only), id="its pool not published"),
    pytest.param(_cluster(_no_provider_config), id="no provider config: held"),
]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_a_stamped_replica_composes_as_one_that_reads_its_cluster(cluster: dict[str, Any]) -> None:
    # Each fact of the stamp has the effect reading it off the cluster had.
    plain = replica()
    first = direct(request(plain))
    assert set(requirements(first)) == {"cluster"}
    reading = direct(request(plain, required=satisfy(first, [cluster])))
    stamped_replica = stamped(plain, cluster)
    alone = direct(request(stamped_replica))
    assert requirements(alone) == {}
    assert desired(alone) == desired(reading)
    assert conditions(alone) == conditions(reading)
    assert results(alone) == results(reading)


def test_the_stamp_is_read_not_the_cluster() -> None:
    # A replica stamped for one gateway composes for it whatever cluster is in the request.
    stamped_replica = stamped(replica(), _cluster(_declared_gateway))
    required = {"cluster": [_cluster(_observed_gateway)]}
    with_cluster = direct(request(stamped_replica, required=required))
    assert desired(with_cluster) == desired(direct(request(stamped_replica)))


def test_ready_replicas_name_and_index_are_kept() -> None:
    # The replica's name never depends on the stamp: it is its (cluster, index) identity.
    for obj in _replicas(_reconcile(deployment(), WORLD)).values():
        index = int(obj["metadata"]["labels"]["modelplane.ai/replica-index"])
        assert obj["metadata"]["name"] == replica_name("qwen3-8b", "us-east-1", index)


IMPLEMENTATIONS = st.sampled_from([None, "GKE", "Istio", "EnvoyGateway", "Kgateway"])
DRIVERS = st.sampled_from(["gpu.nvidia.com", "mig.nvidia.com", "gpu.amd.com", "dra.cpu", "x.io"])


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    """A Ready cluster with any of the facts a replica's composition reads."""
    out = copy.deepcopy(CLUSTER)
    declared = draw(IMPLEMENTATIONS)
    if declared is not None:
        out["spec"]["gateway"] = {"implementation": declared}
    observed = draw(IMPLEMENTATIONS)
    if observed is not None:
        out["status"]["gateway"]["implementation"] = observed
    out["spec"]["stack"] = draw(st.sampled_from(["Standard", "Dynamo"]))
    if draw(st.booleans()):
        del out["status"]["providerConfigRef"]
    pools = []
    for pool in draw(st.lists(st.sampled_from(["h100", "l4", "b200"]), unique=True)):
        drivers = draw(st.lists(DRIVERS, min_size=1, max_size=3, unique=True))
        devices = [
            gpu_device(name=f"d{i}", driver=d, device_class=d) for i, d in enumerate(drivers)
        ]
        pools.append(gpu_pool(pool, 1, *devices))
    out["status"]["gpuPools"] = pools
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), derive=st.booleans())
def test_the_stamp_composes_what_reading_the_cluster_composes(
    cluster: dict[str, Any], derive: bool
) -> None:
    plain = ModelReplica.model_validate(replica())
    model = InferenceCluster.model_validate(cluster)
    info = cluster_info(plain, model)
    with_stamp = plain.model_copy(
        update={"spec": plain.spec.model_copy(update={"cluster_info": info})}
    )
    reading = compose_replica(plain, model, derive_provider_config=derive)
    alone = compose_replica(with_stamp, None, derive_provider_config=derive)
    assert alone == reading


def test_only_the_drivers_that_decide_a_toleration_are_stamped() -> None:
    cluster = copy.deepcopy(CLUSTER)
    cluster["status"]["gpuPools"] = [
        gpu_pool("h100", 1, gpu_device(), gpu_device(name="nic", driver="rdma.nvidia.com")),
    ]
    assert _info(replica(), cluster)["nodePools"] == [
        {"name": "h100", "drivers": ["gpu.nvidia.com"]}
    ]
    cluster["status"]["gpuPools"] = [gpu_pool("h100", 1, gpu_device(driver="x.example.com"))]
    assert "nodePools" not in _info(replica(), cluster)
