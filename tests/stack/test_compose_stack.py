"""The serving stack of one cluster: install order, phases, Provided checks, guards (docs/stack.md)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api.inferencecluster import GpuPool
from modelplane.api.meta import condition
from modelplane.composition.observed import ObservedObject
from modelplane.reconcile.stack import (
    HELM_PROVIDER_CONFIG_KEY,
    StackResult,
    component_keys,
    compose_stack,
    requirement_key,
)
from modelplane.stack.components import COMPONENTS, COMPONENTS_BY_NAME, component
from modelplane.stack.model import ServedApi
from modelplane.stack.selection import StackPlan, plan_stack
from tests.builders import gpu_device, gpu_pool
from tests.paths import SCHEMAS, shared_path

CLUSTER = "gpu-1"
KUBE_CONFIG: dict[str, Any] = {
    "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
    "kind": "ClusterProviderConfig",
    "metadata": {"name": "gpu-1-cluster-kubeconfig-abcde"},
    "spec": {
        "credentials": {
            "source": "Secret",
            "secretRef": {"namespace": "modelplane-system", "name": "k", "key": "kubeconfig"},
        }
    },
}


def _pools(*drivers: str) -> tuple[GpuPool, ...]:
    return tuple(
        GpuPool.model_validate(gpu_pool(f"p{i}", 1, gpu_device(driver=d, device_class=d)))
        for i, d in enumerate(drivers)
    )


def _ready() -> ObservedObject:
    return ObservedObject(conditions=(condition("Ready", True, "Available"),), reported=True)


def _installing() -> ObservedObject:
    return ObservedObject(conditions=(condition("Ready", False, "Creating"),))


def _keys(result: StackResult) -> set[str]:
    return {o.key for o in result.objects}


def _phases(result: StackResult) -> dict[str, str]:
    return {i.name: i.phase for i in result.status.items}


STANDARD = plan_stack("Standard", _pools("gpu.nvidia.com"), "EnvoyGateway")


def _everything_ready(plan: StackPlan) -> dict[str, ObservedObject]:
    return {k: _ready() for c in plan.components for k in component_keys(c)}


# ---------------------------------------------------------------------------------------------
# What a cluster gets


@pytest.mark.parametrize(
    ("stack", "drivers", "gateway", "expected"),
    [
        (
            "Standard",
            ("gpu.nvidia.com",),
            "EnvoyGateway",
            {
                "inference-extension-crds",
                "envoy-gateway",
                "envoy-ai-gateway-crds",
                "envoy-ai-gateway",
                "inference-gateway",
                "lws",
                "nvidia-dra-driver",
            },
        ),
        (
            "Standard",
            ("gpu.nvidia.com",),
            "GKE",
            # The Gateway of GKE's class (planned with GKE only on clusters we provisioned there).
            {"inference-extension-crds", "gke-gateway", "lws", "nvidia-dra-driver"},
        ),
        (
            "Dynamo",
            ("gpu.nvidia.com",),
            "Istio",
            {
                "inference-extension-crds",
                "kai-scheduler",
                "kai-queues",
                "grove",
                "nvidia-dra-driver",
            },
        ),
        ("Standard", ("gpu.amd.com",), None, {"inference-extension-crds", "lws", "amd-dra-driver"}),
        ("Standard", ("dra.cpu",), None, {"inference-extension-crds", "lws", "cpu-dra-driver"}),
        ("Standard", (), None, {"inference-extension-crds", "lws"}),
    ],
)
def test_a_cluster_gets_exactly_the_components_it_needs(
    stack: Any, drivers: tuple[str, ...], gateway: Any, expected: set[str]
) -> None:
    assert plan_stack(stack, _pools(*drivers), gateway).names() == expected


def test_synthetic_devices_need_no_driver() -> None:
    pool = GpuPool.model_validate(
        gpu_pool(
            "p",
            1,
            gpu_device(),
            gpu_device(name="nic", claim="Synthetic", driver="rdma.nvidia.com", device_class=None),
        )
    )
    plan = plan_stack("Standard", (pool,), None)
    assert plan.unsupported_drivers == ()
    assert "nvidia-dra-driver" in plan.names()


def test_a_driver_no_component_installs_is_named_as_the_platforms() -> None:
    plan = plan_stack("Standard", _pools("dra.example.com"), None)
    result = compose_stack(CLUSTER, "Managed", plan, _everything_ready(plan), KUBE_CONFIG)
    assert "no component installs DRA driver dra.example.com" in result.condition.message


def test_table_order_is_install_order() -> None:
    seen: set[str] = set()
    for c in COMPONENTS:
        assert set(c.needs) <= seen, f"{c.name} needs {set(c.needs) - seen} listed after it"
        seen.add(c.name)


# ---------------------------------------------------------------------------------------------
# Managed: install in order


def test_first_reconcile_creates_only_what_needs_nothing() -> None:
    result = compose_stack(CLUSTER, "Managed", STANDARD, {}, KUBE_CONFIG)
    phases = _phases(result)
    assert phases["envoy-gateway"] == "Waiting"
    assert phases["inference-gateway"] == "Waiting"
    assert phases["lws"] == phases["nvidia-dra-driver"] == "Installing"
    assert "stack-lws" in _keys(result)
    assert not any(k.startswith("stack-envoy-gateway") for k in _keys(result))
    assert result.status.phase == "Installing"
    assert result.condition.type == "StackReady" and result.condition.status == "False"
    assert "envoy-gateway v1.8.3 Waiting (waits for inference-extension-crds (Installing))" in (
        result.condition.message or ""
    )


def test_a_component_is_created_once_what_it_needs_is_ready() -> None:
    observed = {k: _ready() for k in component_keys(component("inference-extension-crds"))}
    result = compose_stack(CLUSTER, "Managed", STANDARD, observed, KUBE_CONFIG)
    assert "stack-envoy-gateway" in _keys(result)
    assert "stack-envoy-ai-gateway" not in _keys(result)  # needs envoy-gateway Ready first


def test_everything_ready_reads_ready() -> None:
    result = compose_stack(CLUSTER, "Managed", STANDARD, _everything_ready(STANDARD), KUBE_CONFIG)
    assert result.status.phase == "Ready" and result.status.ready
    assert set(_phases(result).values()) == {"Ready"}
    assert (result.condition.type, result.condition.status, result.condition.reason) == (
        "StackReady",
        "True",
        "Installed",
    )
    # The summary the printer column shows, and each component with its release.
    assert {(i.name, i.version) for i in result.status.items} >= {("lws", "v0.10.0")}


def test_a_dependency_blip_never_uninstalls_its_dependents() -> None:
    observed = _everything_ready(STANDARD)
    for key in component_keys(component("envoy-gateway")):
        observed[key] = _installing()
    result = compose_stack(CLUSTER, "Managed", STANDARD, observed, KUBE_CONFIG)
    assert {k for c in STANDARD.components for k in component_keys(c)} <= _keys(result)
    assert result.status.phase == "Installing"


def test_a_component_no_longer_planned_stays_installed() -> None:
    amd = plan_stack("Standard", _pools("gpu.amd.com"), None)
    observed = _everything_ready(amd)
    without = plan_stack("Standard", _pools("gpu.nvidia.com"), None)
    result = compose_stack(CLUSTER, "Managed", without, observed, KUBE_CONFIG)
    assert "stack-amd-dra-driver" in _keys(result)
    assert "amd-dra-driver" in _phases(result)


def test_a_failed_release_is_failed_with_the_providers_message() -> None:
    observed = _everything_ready(STANDARD)
    observed["stack-lws"] = ObservedObject(
        conditions=(
            condition("Ready", False, "Unavailable"),
            condition("Synced", False, "ReconcileError", "failed to pull chart lws 0.10.0"),
        )
    )
    result = compose_stack(CLUSTER, "Managed", STANDARD, observed, KUBE_CONFIG)
    assert result.status.phase == "Failed"
    assert result.condition.reason == "Failed"
    assert "lws v0.10.0 Failed (failed to pull chart lws 0.10.0)" in (
        result.condition.message or ""
    )


def test_drivers_wait_for_the_cluster_classes() -> None:
    plan = plan_stack("Standard", None, None)
    result = compose_stack(CLUSTER, "Managed", plan, _everything_ready(plan), KUBE_CONFIG)
    assert result.status.phase == "Installing"
    assert "wait for the cluster's InferenceClasses" in (result.condition.message or "")


def test_releases_pin_the_table_and_wait_for_rollout() -> None:
    result = compose_stack(CLUSTER, "Managed", STANDARD, _everything_ready(STANDARD), KUBE_CONFIG)
    releases = {o.key: o.object for o in result.objects if o.object["kind"] == "Release"}
    lws = releases["stack-lws"]["spec"]["forProvider"]
    assert lws["chart"] == {
        "repository": "oci://registry.k8s.io/lws/charts",
        "name": "lws",
        "version": "0.10.0",
    }
    assert lws["namespace"] == "lws-system"
    assert lws["wait"] is True
    assert releases["stack-envoy-gateway"]["spec"]["forProvider"]["wait"] is False
    assert (
        releases["stack-nvidia-dra-driver"]["spec"]["forProvider"]["values"][
            "gpuResourcesEnabledOverride"
        ]
        is True
    )
    assert releases["stack-lws"]["metadata"]["annotations"] == {
        "crossplane.io/external-name": "modelplane-lws"
    }


# ---------------------------------------------------------------------------------------------
# Guards


def _usages(result: StackResult) -> list[dict[str, Any]]:
    return [o.object for o in result.objects if o.object["kind"] == "Usage"]


def _pairs(result: StackResult) -> set[tuple[str, str]]:
    """(of, by) resource keys of every Usage."""
    key_of = {o.object["metadata"]["name"]: o.key for o in result.objects}
    return {
        (
            key_of[u["spec"]["of"]["resourceRef"]["name"]],
            key_of[u["spec"]["by"]["resourceRef"]["name"]],
        )
        for u in _usages(result)
    }


def test_each_dependency_outlives_its_dependents() -> None:
    result = compose_stack(CLUSTER, "Managed", STANDARD, _everything_ready(STANDARD), KUBE_CONFIG)
    pairs = _pairs(result)
    assert ("stack-envoy-gateway", "stack-envoy-ai-gateway") in pairs
    assert ("stack-envoy-ai-gateway-crds", "stack-envoy-ai-gateway") in pairs
    # The CRDs' Job outlives both controllers that watch InferencePools.
    assert ("stack-inference-extension-crds-job", "stack-envoy-gateway") in pairs
    # The Gateway goes first: Envoy Gateway can still remove its proxy and load balancer.
    assert ("stack-envoy-ai-gateway", "stack-inference-gateway-gateway") in pairs
    assert ("stack-inference-gateway-class", "stack-inference-gateway-gateway") in pairs
    assert all(u["spec"]["replayDeletion"] is True for u in _usages(result))
    # Namespaced references: each in the Usage's own namespace, none cluster-scoped.
    assert all("namespace" not in u["spec"]["of"]["resourceRef"] for u in _usages(result))


def test_a_leaf_queue_goes_before_its_root() -> None:
    plan = plan_stack("Dynamo", _pools("gpu.nvidia.com"), None)
    result = compose_stack(CLUSTER, "Managed", plan, _everything_ready(plan), KUBE_CONFIG)
    pairs = _pairs(result)
    # KAI's queue webhook refuses to delete a parent queue that still has children.
    assert ("stack-kai-queues-root", "stack-kai-queues-leaf") in pairs
    assert ("stack-kai-scheduler", "stack-kai-queues-leaf") in pairs
    assert ("stack-kai-scheduler", "stack-grove") in pairs


def test_provider_configs_are_guarded_by_their_providers_not_by_usages() -> None:
    result = compose_stack(CLUSTER, "Managed", STANDARD, _everything_ready(STANDARD), KUBE_CONFIG)
    assert not any(u["spec"]["of"]["kind"] == "ClusterProviderConfig" for u in _usages(result))
    helm = next(o.object for o in result.objects if o.key == HELM_PROVIDER_CONFIG_KEY)
    assert helm["spec"] == KUBE_CONFIG["spec"]  # the same kubeconfig Secret


# ---------------------------------------------------------------------------------------------
# Provided: verify, install nothing

PROVIDED = plan_stack("Standard", _pools("gpu.nvidia.com"), None)


def _present() -> ObservedObject:
    return ObservedObject(
        conditions=(condition("Synced", True, "ReconcileSuccess"),), reported=True
    )


def _absent() -> ObservedObject:
    return ObservedObject(
        conditions=(
            condition(
                "Synced",
                False,
                "ReconcileError",
                "cannot observe external resource: external resource does not exist",
            ),
        )
    )


def _all_present(plan: StackPlan) -> dict[str, ObservedObject]:
    return {
        requirement_key(r): _present() for c in plan.components if c.installs for r in c.requires
    }


def test_provided_installs_nothing_and_observes_each_requirement() -> None:
    result = compose_stack(CLUSTER, "Provided", PROVIDED, {}, KUBE_CONFIG)
    kinds = {o.object["kind"] for o in result.objects}
    assert "Release" not in kinds and HELM_PROVIDER_CONFIG_KEY not in _keys(result)
    checks = [o.object for o in result.objects if o.key.startswith("require-")]
    assert {c["spec"]["forProvider"]["manifest"]["kind"] for c in checks} == {
        "APIService",
        "DeviceClass",
    }
    assert all(c["spec"]["managementPolicies"] == ["Observe"] for c in checks)
    assert result.condition.reason == "Verifying"


def test_provided_missing_one_api_names_it_and_the_release_we_need() -> None:
    observed = _all_present(PROVIDED)
    observed[requirement_key(ServedApi("leaderworkerset.x-k8s.io", "v1", ("LeaderWorkerSet",)))] = (
        _absent()
    )
    result = compose_stack(CLUSTER, "Provided", PROVIDED, observed, KUBE_CONFIG)
    assert result.status.phase == "RequirementsNotMet" and not result.status.ready
    assert (result.condition.type, result.condition.status, result.condition.reason) == (
        "RequirementsMet",
        "False",
        "RequirementsNotMet",
    )
    assert (
        "lws v0.10.0 Missing (missing leaderworkerset.x-k8s.io/v1 (LeaderWorkerSet): "
        "install LeaderWorkerSet v0.10.0 or later)"
    ) in (result.condition.message or "")


def test_provided_with_everything_present_meets_its_requirements() -> None:
    result = compose_stack(CLUSTER, "Provided", PROVIDED, _all_present(PROVIDED), KUBE_CONFIG)
    assert result.status.phase == "RequirementsMet" and result.status.ready
    assert result.condition.status == "True"


def test_provided_dynamo_creates_our_queues_once_kai_is_served() -> None:
    plan = plan_stack("Dynamo", _pools("gpu.nvidia.com"), None)
    before = compose_stack(CLUSTER, "Provided", plan, {}, KUBE_CONFIG)
    assert not any(k.startswith("stack-kai-queues") for k in _keys(before))
    after = compose_stack(CLUSTER, "Provided", plan, _all_present(plan), KUBE_CONFIG)
    queues = [
        o.object["spec"]["forProvider"]["manifest"]
        for o in after.objects
        if o.key.startswith("stack-kai-queues")
    ]
    assert [(q["metadata"]["name"], q["spec"].get("parentQueue")) for q in queues] == [
        ("modelplane-root", None),
        ("modelplane", "modelplane-root"),
    ]


# ---------------------------------------------------------------------------------------------
# Invariants


@settings(max_examples=60, deadline=None)
@given(
    ready=st.sets(st.sampled_from([k for c in STANDARD.components for k in component_keys(c)])),
    composed=st.sets(st.sampled_from([k for c in STANDARD.components for k in component_keys(c)])),
)
def test_composed_components_are_never_dropped(ready: set[str], composed: set[str]) -> None:
    observed = {k: _installing() for k in composed} | {k: _ready() for k in ready}
    result = compose_stack(CLUSTER, "Managed", STANDARD, observed, KUBE_CONFIG)
    for c in STANDARD.components:
        keys = set(component_keys(c))
        if keys & observed.keys():
            assert keys <= _keys(result), c.name
        # Nothing is created before every component it needs is Ready.
        if keys & _keys(result) and not keys & observed.keys():
            for need in c.needs:
                assert all(k in ready for k in component_keys(COMPONENTS_BY_NAME[need]))


# ---------------------------------------------------------------------------------------------
# Released schemas


def _validator(name: str) -> Any:
    import jsonschema
    import yaml

    crd = yaml.safe_load(shared_path("schemas", name).read_text(encoding="utf-8"))
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return jsonschema.Draft7Validator(schema)


SCHEMA_OF = {
    "Release": "helm.m.crossplane.io_releases.yaml",
    "Usage": "protection.crossplane.io_usages.yaml",
    "Object": "kubernetes.m.crossplane.io_objects.yaml",
}
INNER_SCHEMA_OF = {
    "Queue": "scheduling.run.ai_queues.yaml",
    "Gateway": "gateway.networking.k8s.io_gateways.yaml",
    "GatewayClass": "gateway.networking.k8s.io_gatewayclasses.yaml",
}


@pytest.mark.parametrize("mode", ["Managed", "Provided"])
def test_every_composed_object_is_valid_against_its_released_schema(mode: Any) -> None:
    plan = plan_stack("Dynamo", _pools("gpu.nvidia.com", "gpu.amd.com", "dra.cpu"), "EnvoyGateway")
    observed = _everything_ready(plan) | _all_present(plan)
    result = compose_stack(CLUSTER, mode, plan, observed, KUBE_CONFIG)
    checked = 0
    for composed in result.objects:
        obj = composed.object
        kind = obj["kind"]
        if kind == "ClusterProviderConfig":
            _validator("helm.m.crossplane.io_clusterproviderconfigs.yaml").validate(obj)
            checked += 1
            continue
        errors = list(_validator(SCHEMA_OF[kind]).iter_errors(obj))
        assert errors == [], (composed.key, errors[0].message if errors else "")
        checked += 1
        if kind == "Object":
            inner = obj["spec"]["forProvider"]["manifest"]
            if inner["kind"] in INNER_SCHEMA_OF and "spec" in inner:
                _validator(INNER_SCHEMA_OF[inner["kind"]]).validate(inner)
    assert checked == len(result.objects)
    assert SCHEMAS.exists()


def _release_values(result: StackResult, key: str) -> dict[str, Any]:
    release = next(o.object for o in result.objects if o.key == key)
    values: dict[str, Any] = release["spec"]["forProvider"]["values"]
    return values


def test_a_drivers_node_plugin_runs_on_the_pools_claiming_its_devices() -> None:
    plan = plan_stack("Standard", _pools("gpu.nvidia.com", "gpu.amd.com", "gpu.nvidia.com"), None)
    result = compose_stack(CLUSTER, "Managed", plan, _everything_ready(plan), KUBE_CONFIG)
    for key, pools in (("stack-nvidia-dra-driver", ["p0", "p2"]), ("stack-amd-dra-driver", ["p1"])):
        affinity = _release_values(result, key)["kubeletPlugin"]["affinity"]
        terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms["nodeSelectorTerms"] == [
            {"matchExpressions": [{"key": "modelplane.ai/pool", "operator": "In", "values": pools}]}
        ]


def test_a_driver_whose_pools_are_unknown_keeps_its_applied_release() -> None:
    applied = {
        "apiVersion": "helm.m.crossplane.io/v1beta1",
        "kind": "Release",
        "metadata": {
            "name": "gpu-1-stack-nvidia-dra-driver-1a2b3",
            "namespace": "modelplane-system",
        },
        "spec": {"forProvider": {"values": {"kubeletPlugin": {"affinity": {"applied": True}}}}},
    }
    observed = {
        "stack-nvidia-dra-driver": ObservedObject(
            conditions=(condition("Ready", True, ""),), kept=applied
        )
    }
    result = compose_stack(
        CLUSTER, "Managed", plan_stack("Standard", None, None), observed, KUBE_CONFIG
    )
    kept = next(o.object for o in result.objects if o.key == "stack-nvidia-dra-driver")
    assert kept == applied
