"""A GKE InferenceCluster from network to node pools to stack (docs/provisioning.md, "GKE")."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api import InferenceClass, InferenceCluster
from modelplane.api.meta import condition
from modelplane.composition.observed import ObservedObject
from modelplane.naming import child_name
from modelplane.reconcile.cluster import (
    ClassLookups,
    compose_cluster,
    converged_provisioning,
)
from modelplane.reconcile.provision_gke import pool_key, provision_gke
from tests.builders import (
    GKE_MANAGED_KINDS,
    cpu_device,
    gke_cluster,
    gke_recipe,
    inference_class,
)
from tests.composition.schemas import validate_delivered, validate_manifest

READY = ObservedObject(conditions=(condition("Ready", True, "Available"),), reported=True)


def _class(name: str = "h100-8x", recipe: dict[str, Any] | None = None) -> InferenceClass:
    manifest = inference_class(name)
    if recipe is not None:
        manifest["spec"]["provisioning"] = recipe
    return InferenceClass.model_validate(manifest)


def _cluster(**kwargs: Any) -> InferenceCluster:
    return InferenceCluster.model_validate(gke_cluster(**kwargs))


def _classes(*found: InferenceClass) -> dict[str, InferenceClass]:
    return {c.metadata.name or "": c for c in found}


def _by_kind(objects: Any) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for o in objects:
        out.setdefault(o.object["kind"], []).append(o.object)
    return out


def test_every_managed_resource_is_valid_against_its_released_schema() -> None:
    """provider-upjet-gcp v3.0.0's CRDs, their CEL rules (required parameters) included."""
    cluster = _cluster(taints=[{"key": "team", "value": "ml", "effect": "NoSchedule"}])
    result = converged_provisioning(cluster, _classes(_class(recipe=gke_recipe())))
    assert result is not None and result.ready and result.message is None
    kinds = _by_kind(result.objects)
    assert set(kinds) == {*GKE_MANAGED_KINDS, "Object", "Usage"}
    for composed in result.objects:
        if composed.object["kind"] == "Object":
            validate_delivered(composed.object)
        else:
            validate_manifest(composed.object)


def test_the_cluster_is_regional_vpc_native_private_with_gateway_api_and_filestore() -> None:
    result = converged_provisioning(_cluster(), _classes(_class(recipe=gke_recipe())))
    assert result is not None
    [gke] = _by_kind(result.objects)["Cluster"]
    spec = gke["forProvider"] if "forProvider" in gke else gke["spec"]["forProvider"]
    assert spec["location"] == "us-east4" and spec["minMasterVersion"] == "1.35"
    assert spec["removeDefaultNodePool"] is True
    assert spec["gatewayApiConfig"] == {"channel": "CHANNEL_STANDARD"}
    assert spec["addonsConfig"]["gcpFilestoreCsiDriverConfig"] == {"enabled": True}
    assert spec["privateClusterConfig"]["enablePrivateNodes"] is True
    # The kubeconfig lands where the provider configs read it.
    assert gke["spec"]["writeConnectionSecretToRef"] == {"name": result.connection[1]}
    assert result.connection == (
        "modelplane-system",
        child_name("us-east-1", "gke-kubeconfig"),
        "kubeconfig",
    )
    subnets = {
        s["spec"]["forProvider"].get("purpose", "PRIVATE")
        for s in _by_kind(result.objects)["Subnetwork"]
    }
    assert subnets == {"PRIVATE", "REGIONAL_MANAGED_PROXY"}


@pytest.mark.parametrize(
    ("recipe", "path", "expected"),
    [
        (gke_recipe(machine_type="a3-megagpu-8g"), ("machineType",), "a3-megagpu-8g"),
        (
            gke_recipe(accelerator="nvidia-h200-141gb"),
            ("guestAccelerator", 0, "type"),
            "nvidia-h200-141gb",
        ),
        (
            gke_recipe(machine_type="a2-highgpu-4g", accelerator="nvidia-tesla-a100", count=4),
            ("guestAccelerator", 0, "count"),
            4,
        ),
    ],
)
def test_a_recipe_change_changes_its_node_pool(
    recipe: dict[str, Any], path: tuple[Any, ...], expected: Any
) -> None:
    before = provision_gke(_cluster(), _classes(_class(recipe=gke_recipe())), {})
    after = provision_gke(_cluster(), _classes(_class(recipe=recipe)), {})

    def pool(result: Any) -> Any:
        node = next(o.object for o in result.objects if o.key == pool_key("h100"))
        node = node["spec"]["forProvider"]["nodeConfig"]
        for part in path:
            node = node[part]
        return node

    assert pool(after) == expected != pool(before)


def test_a_gpu_pool_carries_the_labels_taints_and_bounds_a_replica_needs() -> None:
    cluster = _cluster(
        node_pools=[
            {
                "name": "h100",
                "className": "h100-8x",
                "nodeCount": 2,
                "minNodeCount": 0,
                "maxNodeCount": 6,
                "zones": ["us-east4-a", "us-east4-b"],
            }
        ],
        taints=[{"key": "team", "value": "ml", "effect": "NoExecute"}],
    )
    result = provision_gke(cluster, _classes(_class(recipe=gke_recipe())), {})
    pool = next(o.object for o in result.objects if o.key == pool_key("h100"))["spec"][
        "forProvider"
    ]
    assert pool["nodeConfig"]["labels"] == {
        "modelplane.ai/pool": "h100",
        "gke-no-default-nvidia-gpu-device-plugin": "true",
        "nvidia.com/gpu.present": "true",
        "cloud.google.com/gke-nvidia-gpu-dra-driver": "true",
    }
    assert pool["nodeConfig"]["taint"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
        {"key": "team", "value": "ml", "effect": "NO_EXECUTE"},
    ]
    assert pool["autoscaling"]["totalMinNodeCount"] == 0
    assert pool["autoscaling"]["totalMaxNodeCount"] == 6
    assert pool["nodeLocations"] == ["us-east4-a", "us-east4-b"]
    assert pool["initialNodeCount"] == 1  # 2 nodes over 2 zones


def test_a_cpu_only_pool_gets_no_accelerator_and_the_cpu_pool_taint() -> None:
    """A CPU-only class (ICL-10) provisions plain nodes its pods tolerate (composition/taints.py)."""
    manifest = inference_class("c4-cpu", cpu_device("90"))
    manifest["spec"]["provisioning"] = {"provider": "GKE", "gke": {"machineType": "c4-standard-96"}}
    cpu_class = InferenceClass.model_validate(manifest)
    cluster = _cluster(node_pools=[{"name": "cpu", "className": "c4-cpu", "nodeCount": 2}])
    result = provision_gke(cluster, _classes(cpu_class), {})
    pool = next(o.object for o in result.objects if o.key == pool_key("cpu"))["spec"]["forProvider"]
    assert pool["nodeConfig"]["machineType"] == "c4-standard-96"
    assert "guestAccelerator" not in pool["nodeConfig"]
    assert pool["nodeConfig"]["labels"] == {"modelplane.ai/pool": "cpu"}
    assert pool["nodeConfig"]["taint"] == [
        {"key": "modelplane.ai/cpu", "value": "true", "effect": "NO_SCHEDULE"}
    ]
    validate_manifest(next(o.object for o in result.objects if o.key == pool_key("cpu")))


@pytest.mark.parametrize(
    ("recipe", "message"),
    [
        (
            None,
            "spec.nodePools[h100]: InferenceClass h100-8x has no GKE recipe (spec.provisioning.gke)",
        ),
    ],
)
def test_a_pool_whose_class_has_no_gke_recipe_is_a_clear_error(
    recipe: dict[str, Any] | None, message: str
) -> None:
    cluster = _cluster()
    lookups = ClassLookups(_classes(_class(recipe=recipe)), (), ())
    composed = compose_cluster(cluster, lookups, {})
    [ready] = [c for c in composed.conditions if c.type == "ClusterReady"]
    assert (ready.status, ready.reason) == ("False", "Provisioning")
    assert message in (ready.message or "")
    assert composed.objects == [] and composed.ready is False


def test_an_error_keeps_what_was_provisioned() -> None:
    """A class edited to drop its recipe never deletes a running cluster."""
    good = provision_gke(_cluster(), _classes(_class(recipe=gke_recipe())), {})
    observed = {
        o.key: ObservedObject(conditions=READY.conditions, kept=o.object) for o in good.objects
    }
    held = provision_gke(_cluster(), _classes(_class()), observed)
    assert {o.key for o in held.objects} == {o.key for o in good.objects}
    assert not held.ready and "no GKE recipe" in (held.message or "")


def test_nothing_ready_composes_the_cloud_only_and_names_what_is_provisioning() -> None:
    lookups = ClassLookups(_classes(_class(recipe=gke_recipe())), (), ())
    composed = compose_cluster(_cluster(), lookups, {})
    kinds = {o.object["kind"] for o in composed.objects}
    assert "ClusterProviderConfig" not in kinds and "Release" not in kinds
    [ready] = [c for c in composed.conditions if c.type == "ClusterReady"]
    assert (ready.status, ready.reason) == ("False", "Provisioning")
    assert "Network network" in (ready.message or "") and "NodePool pool-h100" in (
        ready.message or ""
    )
    assert composed.status.provider_config_ref is None
    # Pools are published as an Existing cluster's are, so the scheduler knows them.
    assert [p.name for p in composed.status.gpu_pools or ()] == ["h100"]
    assert composed.ready is False


def test_everything_ready_composes_provider_configs_and_the_stack() -> None:
    cluster = _cluster()
    classes = _classes(_class(recipe=gke_recipe()))
    provisioned = converged_provisioning(cluster, classes)
    assert provisioned is not None
    account = ObservedObject(
        conditions=READY.conditions, email="a@p.iam.gserviceaccount.com", project="p"
    )
    observed = {
        o.key: account if o.object["kind"] == "ServiceAccount" else READY
        for o in provisioned.objects
    }
    composed = compose_cluster(cluster, ClassLookups(classes, (), ()), observed)
    by_key = {o.key: o.object for o in composed.objects}
    config = by_key["cluster-provider-config"]
    assert config["spec"]["credentials"]["secretRef"] == {
        "namespace": "modelplane-system",
        "name": child_name("us-east-1", "gke-kubeconfig"),
        "key": "kubeconfig",
    }
    # provider-kubernetes v1.2.1 and provider-helm v1.4.0 add a Google token to the kubeconfig.
    assert config["spec"]["identity"] == {
        "type": "GoogleApplicationCredentials",
        "source": "Secret",
        "secretRef": {
            "namespace": "modelplane-system",
            "name": child_name("us-east-1", "gke-access-key"),
            "key": "private_key",
        },
    }
    assert any(k.startswith("stack-") for k in by_key)
    assert composed.status.provider_config_ref is not None
    assert (
        composed.status.cache is not None
        and composed.status.cache.storage_class_name == "modelplane-rwx"
    )
    [ready] = [c for c in composed.conditions if c.type == "ClusterReady"]
    # The stack was just composed: not Ready yet, so neither is the cluster.
    assert (ready.status, ready.reason) == ("False", "StackNotReady")
    # The cluster and the access key outlive the stack's last objects: its uninstall still
    # reaches the cluster. Node pools are not kept under the stack (an uninstall is API calls).
    kept = {
        o["spec"]["of"]["kind"]
        for o in by_key.values()
        if o["kind"] == "Usage" and o["spec"]["by"]["apiVersion"].startswith("helm")
    }
    assert kept == {"Cluster", "ServiceAccountKey"}


def test_aks_nebius_vultr_stay_unsupported_naming_what_is() -> None:
    manifest = gke_cluster()
    manifest["spec"]["cluster"] = {"source": "AKS", "aks": {"location": "eastus"}}
    composed = compose_cluster(
        InferenceCluster.model_validate(manifest), ClassLookups({}, (), ()), {}
    )
    [ready] = composed.conditions
    assert ready.reason == "SourceNotSupported"
    assert "supported: GKE, EKS and Existing" in (ready.message or "")
