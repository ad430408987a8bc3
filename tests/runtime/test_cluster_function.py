"""The InferenceCluster function over gRPC (docs/crossplane.md, "How the function behaves")."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from modelplane.api.inferencecluster import IdentitySecretRef
from modelplane.naming import child_name
from tests.builders import gpu_device, gpu_pool

from .conftest import Stubs
from .helpers import (
    composite_ready,
    composite_status,
    conditions,
    desired,
    direct,
    existing_cluster,
    inference_class,
    plumbing,
    readiness,
    replica,
    request,
    requirements,
    results,
    satisfy,
)

# What every replica's picker on the cluster shares, composed once by the cluster.
SHARED_KEYS = ("epp-serviceaccount", "epp-role", "epp-rolebinding", "epp-config")

CPC = child_name("us-east-1", "cluster-kubeconfig")
WORLD = [inference_class("h100-8x"), inference_class("l4-1x", count=1)]


def _two_calls(
    stubs: Stubs, cluster: dict[str, Any], observed: dict[str, Any] | None = None
) -> Any:
    first = stubs.v1.RunFunction(request(cluster, observed=observed))
    return first, stubs.v1.RunFunction(
        request(cluster, observed=observed, required=satisfy(first, WORLD))
    )


def test_first_call_asks_for_classes_and_keeps_published_pools(stubs: Stubs) -> None:
    published = [{"name": "old", "nodes": 2, "devices": []}]
    cluster = existing_cluster(pools=[("h100", "h100-8x", 4)], status={"gpuPools": published})
    rsp = direct(request(cluster))
    assert requirements(rsp) == {
        "class-h100-8x": {
            "api_version": "modelplane.ai/v1alpha1",
            "kind": "InferenceClass",
            "match_name": "h100-8x",
        },
        # On the wire as Crossplane v2.3 lists it: every namespace, by the cluster label.
        "replicas": {
            "api_version": "modelplane.ai/v1alpha1",
            "kind": "ModelReplica",
            "match_labels": {"labels": {"modelplane.ai/cluster": "us-east-1"}},
        },
        # Every destination and mapping: which select it, what its collector renames.
        "telemetry-destinations": {
            "api_version": "modelplane.ai/v1alpha1",
            "kind": "TelemetryDestination",
            "match_labels": {},
        },
        "metric-mappings": {
            "api_version": "modelplane.ai/v1alpha1",
            "kind": "MetricMapping",
            "match_labels": {},
        },
    }
    assert composite_status(rsp)["gpuPools"] == published


def test_pools_derived_from_node_pools_and_classes(stubs: Stubs) -> None:
    cluster = existing_cluster(pools=[("h100", "h100-8x", 4), ("l4", "l4-1x", 2)])
    cluster["spec"]["nodePools"][1]["maxNodeCount"] = 6
    _, rsp = _two_calls(stubs, cluster)
    pools = composite_status(rsp)["gpuPools"]
    assert [(p["name"], p["nodes"]) for p in pools] == [("h100", 4), ("l4", 6)]
    assert pools[0]["devices"] == [
        {
            "name": "gpu",
            "claim": "DRA",
            "driver": "gpu.nvidia.com",
            "deviceClassName": "gpu.nvidia.com",
            "count": 8,
            "capacity": {"memory": {"value": "81559Mi"}},
        }
    ]
    assert conditions(rsp)[0] == ("ClusterReady", "True", "ClusterRunning", "")
    assert results(rsp) == []


def test_existing_cluster_composes_provider_config_and_observed_gateway(stubs: Stubs) -> None:
    _, rsp = _two_calls(stubs, existing_cluster(identity=True, components="Provided"))
    objects = plumbing(desired(rsp))
    assert set(objects) == {"cluster-provider-config", "inference-gateway", *SHARED_KEYS}
    assert objects["cluster-provider-config"] == {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "ClusterProviderConfig",
        "metadata": {"name": CPC},
        "spec": {
            "credentials": {
                "source": "Secret",
                "secretRef": {
                    "namespace": "modelplane-system",
                    "name": "us-east-1-kubeconfig",
                    "key": "kubeconfig",
                },
            },
            "identity": {
                "type": "AzureWorkloadIdentityCredentials",
                "source": "Secret",
                "secretRef": {
                    "namespace": "modelplane-system",
                    "name": "us-east-1-identity",
                    "key": "private_key",
                },
            },
        },
    }
    gateway = objects["inference-gateway"]
    assert gateway["metadata"] == {
        "name": child_name("us-east-1", "inference-gateway"),
        "namespace": "modelplane-system",
    }
    assert gateway["spec"]["managementPolicies"] == ["Observe"]
    assert gateway["spec"]["watch"] is True  # its address makes the cluster Ready
    assert gateway["spec"]["providerConfigRef"] == {"kind": "ClusterProviderConfig", "name": CPC}
    assert gateway["spec"]["forProvider"]["manifest"] == {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "inference-gateway", "namespace": "modelplane-system"},
    }
    assert gateway["spec"]["readiness"] == {
        "policy": "DeriveFromCelQuery",
        "celQuery": "has(object.status.addresses) && size(object.status.addresses) > 0",
    }
    # Nothing observed yet: nothing marked, readiness left to Crossplane.
    assert plumbing(readiness(rsp)) == {
        "cluster-provider-config": "READY_UNSPECIFIED",
        "inference-gateway": "READY_UNSPECIFIED",
        **dict.fromkeys(SHARED_KEYS, "READY_UNSPECIFIED"),
    }
    assert composite_ready(rsp) == "READY_UNSPECIFIED"
    assert composite_status(rsp)["providerConfigRef"] == {
        "kind": "ClusterProviderConfig",
        "name": CPC,
    }
    assert "gateway" not in composite_status(rsp)


def _observed_gateway(addresses: list[dict[str, Any]], ready: bool) -> dict[str, Any]:
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {
            "name": child_name("us-east-1", "inference-gateway"),
            "namespace": "modelplane-system",
        },
        "spec": {"forProvider": {"manifest": {}}},
        "status": {
            "atProvider": {"manifest": {"status": {"addresses": addresses}}},
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "reason": "Available"}
            ],
        },
    }


def test_gateway_address_published_once_observed(stubs: Stubs) -> None:
    observed = {
        "cluster-provider-config": {
            "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
            "kind": "ClusterProviderConfig",
            "metadata": {"name": CPC},
        },
        "inference-gateway": _observed_gateway(
            [{"value": ""}, {"type": "IPAddress", "value": "203.0.113.10"}], True
        ),
    }
    _, rsp = _two_calls(stubs, existing_cluster(components="Provided"), observed)
    assert composite_status(rsp)["gateway"] == {"address": "203.0.113.10"}
    assert plumbing(readiness(rsp)) == {
        "cluster-provider-config": "READY_TRUE",
        "inference-gateway": "READY_TRUE",
        **dict.fromkeys(SHARED_KEYS, "READY_UNSPECIFIED"),
    }


def test_gateway_blip_keeps_the_published_address(stubs: Stubs) -> None:
    cluster = existing_cluster(
        status={"gateway": {"address": "198.51.100.7"}}, components="Provided"
    )
    observed = {"inference-gateway": _observed_gateway([], False)}
    _, rsp = _two_calls(stubs, cluster, observed)
    assert composite_status(rsp)["gateway"] == {"address": "198.51.100.7"}
    assert readiness(rsp)["inference-gateway"] == "READY_UNSPECIFIED"


def test_missing_class_waits_without_pools_but_keeps_the_plumbing(stubs: Stubs) -> None:
    cluster = existing_cluster(
        pools=[("a", "nope-2", 1), ("b", "h100-8x", 1), ("c", "nope-1", 1)], components="Provided"
    )
    _, rsp = _two_calls(stubs, cluster)
    text = "Waiting for InferenceClasses: nope-1, nope-2"
    assert conditions(rsp)[0] == ("ClusterReady", "False", "WaitingForClasses", text)
    assert results(rsp) == [("NORMAL", text)]
    assert "gpuPools" not in composite_status(rsp)
    assert set(plumbing(desired(rsp))) == {
        "cluster-provider-config",
        "inference-gateway",
        *SHARED_KEYS,
    }


@pytest.mark.parametrize("source", ["AKS", "Nebius", "Vultr"])
def test_other_sources_are_reported_not_provisioned(stubs: Stubs, source: str) -> None:
    cluster = existing_cluster()
    block = {"GKE": "gke", "EKS": "eks", "AKS": "aks", "Nebius": "nebius", "Vultr": "vultr"}[source]
    cluster["spec"]["cluster"] = {
        "source": source,
        block: {}
        if source == "Nebius"
        else ({"location": "eastus"} if source == "AKS" else {"region": "r1"}),
    }
    _, rsp = _two_calls(stubs, cluster)
    assert desired(rsp) == {}
    assert composite_ready(rsp) == "READY_FALSE"
    assert conditions(rsp) == [
        (
            "ClusterReady",
            "False",
            "SourceNotSupported",
            f"spec.cluster.source {source} is not provisioned by this project; "
            "supported: GKE, EKS and Existing (bring the cluster)",
        )
    ]
    assert [p["name"] for p in composite_status(rsp)["gpuPools"]] == ["h100"]


def test_a_gke_cluster_composes_its_cloud_resources(stubs: Stubs) -> None:
    cluster = existing_cluster()
    cluster["spec"]["cluster"] = {"source": "GKE", "gke": {"region": "us-east4"}}
    recipe = {
        "provider": "GKE",
        "gke": {
            "machineType": "a3-highgpu-8g",
            "accelerator": {"type": "nvidia-h100-80gb", "count": 8},
        },
    }
    world = [dict(c, spec={**c["spec"], "provisioning": recipe}) for c in WORLD]
    first = stubs.v1.RunFunction(request(cluster))
    rsp = stubs.v1.RunFunction(request(cluster, required=satisfy(first, world)))
    kinds = {o["kind"] for o in desired(rsp).values()}
    assert {"Network", "Subnetwork", "Router", "RouterNAT", "Cluster", "NodePool"} <= kinds
    assert "ClusterProviderConfig" not in kinds  # not before the cluster answers
    assert composite_ready(rsp) == "READY_FALSE"
    [(kind, state, reason, message)] = conditions(rsp)
    assert (kind, state, reason) == ("ClusterReady", "False", "Provisioning")
    assert message.startswith("provisioning on GKE: Network network")


def test_invalid_class_in_required_resources_is_a_warning(stubs: Stubs) -> None:
    bad = inference_class("h100-8x")
    bad["spec"]["devices"][0]["count"] = 65
    rsp = direct(request(existing_cluster(), required={"class-h100-8x": [bad]}))
    assert results(rsp) == [
        (
            "WARNING",
            "invalid required resource class-h100-8x: InferenceClass h100-8x: "
            "spec.devices[0].count: Invalid value: 65: must be less than or equal to 64; keeping 0 existing composed resources",
        )
    ]
    assert desired(rsp) == {}


def test_existing_without_its_block_is_fatal(stubs: Stubs) -> None:
    cluster = existing_cluster()
    del cluster["spec"]["cluster"]["existing"]
    rsp = stubs.v1.RunFunction(request(cluster))
    assert results(rsp) == [
        (
            "FATAL",
            "invalid InferenceCluster us-east-1: spec.cluster: "
            "spec.cluster.existing is required when spec.cluster.source is Existing.",
        )
    ]


def _observed_with_class(class_name: str | None) -> dict[str, Any]:
    gateway = _observed_gateway([{"value": "203.0.113.10"}], True)
    if class_name is not None:
        gateway["status"]["atProvider"]["manifest"]["spec"] = {"gatewayClassName": class_name}
    return gateway


def _observed_class(name: str, controller: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {
            "name": child_name("us-east-1", "inference-gateway-class"),
            "namespace": "modelplane-system",
        },
        "spec": {"forProvider": {"manifest": {}}},
        "status": {
            "atProvider": {
                "manifest": {"metadata": {"name": name}, "spec": {"controllerName": controller}}
            },
            "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}],
        },
    }


def test_gateway_class_is_observed_once_the_gateway_names_it(stubs: Stubs) -> None:
    observed = {"inference-gateway": _observed_with_class("istio")}
    _, rsp = _two_calls(stubs, existing_cluster(components="Provided"), observed)
    gateway_class = desired(rsp)["inference-gateway-class"]
    assert gateway_class["metadata"] == {
        "name": child_name("us-east-1", "inference-gateway-class"),
        "namespace": "modelplane-system",
    }
    assert gateway_class["spec"]["managementPolicies"] == ["Observe"]
    assert gateway_class["spec"]["forProvider"]["manifest"] == {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": "istio"},
    }
    # Not observed yet: nothing is claimed about the implementation.
    assert composite_status(rsp)["gateway"] == {"address": "203.0.113.10"}


@pytest.mark.parametrize(
    ("controller", "implementation"),
    [
        ("istio.io/gateway-controller", "Istio"),
        ("networking.gke.io/gateway", "GKE"),
        ("gateway.envoyproxy.io/gatewayclass-controller", "EnvoyGateway"),
        ("kgateway.dev/kgateway", "Kgateway"),
        ("example.com/unknown", None),
    ],
)
def test_gateway_implementation_is_published_from_the_class_controller(
    stubs: Stubs, controller: str, implementation: str | None
) -> None:
    observed = {
        "inference-gateway": _observed_with_class("gw"),
        "inference-gateway-class": _observed_class("gw", controller),
    }
    _, rsp = _two_calls(stubs, existing_cluster(components="Provided"), observed)
    expected: dict[str, Any] = {"address": "203.0.113.10"}
    if implementation is not None:
        expected["implementation"] = implementation
    assert composite_status(rsp)["gateway"] == expected
    assert readiness(rsp)["inference-gateway-class"] == "READY_TRUE"


def test_a_class_observed_under_its_old_name_does_not_speak_for_the_new_one(stubs: Stubs) -> None:
    cluster = existing_cluster(status={"gateway": {"address": "x", "implementation": "Kgateway"}})
    observed = {
        "inference-gateway": _observed_with_class("istio"),
        "inference-gateway-class": _observed_class("kgateway", "kgateway.dev/kgateway"),
    }
    _, rsp = _two_calls(stubs, cluster, observed)
    assert desired(rsp)["inference-gateway-class"]["spec"]["forProvider"]["manifest"][
        "metadata"
    ] == {"name": "istio"}
    # Kept until the new class is observed.
    assert composite_status(rsp)["gateway"]["implementation"] == "Kgateway"


def test_gateway_blip_keeps_the_published_implementation(stubs: Stubs) -> None:
    cluster = existing_cluster(
        status={"gateway": {"address": "198.51.100.7", "implementation": "Istio"}}
    )
    observed = {"inference-gateway": _observed_gateway([], False)}
    _, rsp = _two_calls(stubs, cluster, observed)
    assert composite_status(rsp)["gateway"] == {
        "address": "198.51.100.7",
        "implementation": "Istio",
    }
    assert "inference-gateway-class" not in desired(rsp)


# crossplane-contrib/provider-kubernetes v1.2.1 (its latest release):
# pkg/kube/config/config.go enumerates IdentityType, and pkg/kube/client/client.go refuses
# a Secret source for AWSWebIdentityCredentials (InjectedIdentity only).
# NebiusServiceAccountCredentials exists only on its main branch.
PROVIDER_KUBERNETES_V1_2_1_IDENTITY_TYPES = {
    "GoogleApplicationCredentials",
    "AzureServicePrincipalCredentials",
    "AzureWorkloadIdentityCredentials",
    "UpboundTokens",
    "AWSWebIdentityCredentials",
}
INJECTED_IDENTITY_ONLY = {"AWSWebIdentityCredentials"}


def test_identity_types_are_what_released_provider_kubernetes_takes_from_a_secret() -> None:
    offered = set(get_args(IdentitySecretRef.model_fields["type"].annotation))
    assert offered <= PROVIDER_KUBERNETES_V1_2_1_IDENTITY_TYPES - INJECTED_IDENTITY_ONLY
    assert {"GoogleApplicationCredentials", "AzureWorkloadIdentityCredentials"} <= offered


def test_occupancy_is_published_from_the_replicas_labelled_for_the_cluster(stubs: Stubs) -> None:
    # Every namespace's ModelReplicas labelled modelplane.ai/cluster=us-east-1
    # are charged on the pools published beside them, in (namespace, name) order.
    cluster = existing_cluster(pools=[("h100", "h100-8x", 2), ("l4", "l4-1x", 1)])
    pinned = [
        replica(name="qwen-a", namespace="ml-team", index=0),
        replica(name="llama-a", namespace="team-b", index=0, deployment_name="llama"),
    ]
    elsewhere = replica(name="qwen-b", cluster="eu-west-1", index=1)
    world = [*WORLD, *pinned, elsewhere]
    first = stubs.v1.RunFunction(request(cluster))
    rsp = stubs.v1.RunFunction(request(cluster, required=satisfy(first, world)))
    # The label selector fetched the two, not the third (satisfy answers as Crossplane does).
    assert composite_status(rsp)["occupancy"] == {
        "replicas": ["ml-team/qwen-a", "team-b/llama-a"],
        "pools": [
            {
                "name": "h100",
                "nodes": [{"count": 1, "free": {"gpu": 6}}, {"count": 1, "free": {"gpu": 8}}],
            }
        ],
    }
    # None pinned: published, every pool free (a deployment may place there).
    empty = stubs.v1.RunFunction(request(cluster, required=satisfy(first, WORLD)))
    assert composite_status(empty)["occupancy"] == {"replicas": []}


def test_occupancy_waits_for_the_replicas_and_keeps_what_was_published(stubs: Stubs) -> None:
    previous = {"replicas": ["ml-team/x"]}
    cluster = existing_cluster(
        pools=[("h100", "h100-8x", 1)],
        status={"gpuPools": [gpu_pool("h100", 1, gpu_device())], "occupancy": previous},
    )
    # The classes are fetched, the replicas not yet: the previous occupancy stays.
    required = {"class-h100-8x": [inference_class("h100-8x")]}
    rsp = direct(request(cluster, required=required))
    assert composite_status(rsp)["occupancy"] == previous


def test_no_pools_no_occupancy(stubs: Stubs) -> None:
    # A class is missing: no pools, so nothing can be charged and none is published.
    cluster = existing_cluster(pools=[("h100", "missing-class", 1)])
    first = stubs.v1.RunFunction(request(cluster))
    rsp = stubs.v1.RunFunction(request(cluster, required=satisfy(first, [replica()])))
    assert "occupancy" not in composite_status(rsp)


def test_a_malformed_pinned_replica_holds_the_published_status(stubs: Stubs) -> None:
    previous = {"replicas": ["ml-team/x"]}
    cluster = existing_cluster(
        pools=[("h100", "h100-8x", 1)],
        status={"gpuPools": [gpu_pool("h100", 1, gpu_device())], "occupancy": previous},
    )
    bad = replica()
    bad["spec"]["engines"] = "not a list"
    required = {"class-h100-8x": [inference_class("h100-8x")], "replicas": [bad]}
    rsp = direct(request(cluster, required=required))
    assert composite_status(rsp)["occupancy"] == previous
    [(severity, message)] = results(rsp)
    assert severity == "WARNING"
    assert message.startswith("invalid required resource replicas: ModelReplica ml-team/")


def test_cluster_composes_what_every_replica_picker_shares(stubs: Stubs) -> None:
    observed = {"epp-serviceaccount": {"status": {"conditions": []}}}
    _, rsp = _two_calls(stubs, existing_cluster(), observed)
    objects = desired(rsp)
    remote = {k: objects[k]["spec"]["forProvider"]["manifest"] for k in SHARED_KEYS}
    assert {k: (m["kind"], m["metadata"]) for k, m in remote.items()} == {
        "epp-serviceaccount": (
            "ServiceAccount",
            {"name": "modelplane-epp", "namespace": "default"},
        ),
        "epp-role": ("Role", {"name": "modelplane-epp", "namespace": "default"}),
        "epp-rolebinding": ("RoleBinding", {"name": "modelplane-epp", "namespace": "default"}),
        "epp-config": ("ConfigMap", {"name": "modelplane-epp", "namespace": "default"}),
    }
    for key in SHARED_KEYS:
        obj = objects[key]
        assert obj["metadata"]["name"] == child_name("us-east-1", key)
        assert obj["metadata"]["namespace"] == "modelplane-system"
        assert obj["spec"]["providerConfigRef"] == {"kind": "ClusterProviderConfig", "name": CPC}
        assert obj["spec"]["readiness"] == {"policy": "SuccessfulCreate"}
    # Created once observed; the rest not yet.
    assert readiness(rsp)["epp-serviceaccount"] == "READY_TRUE"
    assert readiness(rsp)["epp-role"] == "READY_UNSPECIFIED"


def _observed_check(api_service: str, present: bool) -> dict[str, Any]:
    """An observe-only requirement Object as provider-kubernetes reports it."""
    key = f"require-api-{api_service}"
    status: dict[str, Any] = (
        {
            "atProvider": {"manifest": {"metadata": {"name": api_service}}},
            "conditions": [{"type": "Synced", "status": "True", "reason": "ReconcileSuccess"}],
        }
        if present
        else {
            "conditions": [
                {
                    "type": "Synced",
                    "status": "False",
                    "reason": "ReconcileError",
                    "message": "cannot observe external resource: external resource does not exist",
                }
            ]
        }
    )
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": child_name("us-east-1", key), "namespace": "modelplane-system"},
        "spec": {"forProvider": {"manifest": {}}},
        "status": status,
    }


def test_provided_cluster_missing_an_api_reports_it_over_grpc(stubs: Stubs) -> None:
    observed = {
        "require-api-v1.inference.networking.k8s.io": _observed_check(
            "v1.inference.networking.k8s.io", True
        ),
        "require-api-v1.gateway.networking.k8s.io": _observed_check(
            "v1.gateway.networking.k8s.io", True
        ),
        "require-api-v1.leaderworkerset.x-k8s.io": _observed_check(
            "v1.leaderworkerset.x-k8s.io", False
        ),
    }
    cluster = existing_cluster(components="Provided")
    _, rsp = _two_calls(stubs, cluster, observed)
    objects = desired(rsp)
    assert not any(o["kind"] == "Release" for o in objects.values())
    check = objects["require-api-v1.leaderworkerset.x-k8s.io"]
    assert check["spec"]["managementPolicies"] == ["Observe"]
    assert check["spec"]["forProvider"]["manifest"] == {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1.leaderworkerset.x-k8s.io"},
    }
    stack = composite_status(rsp)["stack"]
    assert (stack["components"], stack["phase"]) == ("Provided", "RequirementsNotMet")
    lws = next(i for i in stack["items"] if i["name"] == "lws")
    assert (lws["version"], lws["phase"]) == ("v0.10.0", "Missing")
    met = next(c for c in conditions(rsp) if c[0] == "RequirementsMet")
    assert met[1:3] == ("False", "RequirementsNotMet")
    assert "leaderworkerset.x-k8s.io/v1 (LeaderWorkerSet)" in met[3]
    assert "LeaderWorkerSet v0.10.0 or later" in met[3]
    # The DeviceClass of the pools' driver is not observed yet: named as not verified.
    assert "nvidia-dra-driver v0.4.1 Waiting (not verified yet)" in met[3]


def test_managed_cluster_publishes_its_stack_in_install_order_over_grpc(stubs: Stubs) -> None:
    _, rsp = _two_calls(stubs, existing_cluster())
    stack = composite_status(rsp)["stack"]
    assert (stack["components"], stack["phase"]) == ("Managed", "Installing")
    assert [i["name"] for i in stack["items"]] == [
        "inference-extension-crds",
        "envoy-gateway",
        "envoy-ai-gateway-crds",
        "envoy-ai-gateway",
        "inference-gateway",
        "lws",
        "nvidia-dra-driver",
    ]
    objects = desired(rsp)
    assert objects["stack-lws"]["kind"] == "Release"
    assert "stack-envoy-ai-gateway" not in objects  # waits for Envoy Gateway
    ready = next(c for c in conditions(rsp) if c[0] == "StackReady")
    assert ready[1:3] == ("False", "Installing")


def test_cluster_composes_and_withdraws_team_namespaces_over_grpc(stubs: Stubs) -> None:
    # A Namespace Object (never deleting: Delete is not among its management policies) and
    # the pickers' shared objects for each team namespace the cluster's replicas are in;
    # none for default, nor for an earlier release's replica (no remote-namespace label).
    cluster = existing_cluster()
    old = replica(name="old-a", namespace="team-c")
    del old["metadata"]["labels"]["modelplane.ai/remote-namespace"]
    world = [*WORLD, replica(), replica(name="b", namespace="team-b"), old]
    first = stubs.v1.RunFunction(request(cluster))
    rsp = stubs.v1.RunFunction(request(cluster, required=satisfy(first, world)))
    objects = desired(rsp)
    teams = sorted(k for k in objects if k.startswith("team-namespace-"))
    assert teams == ["team-namespace-ml-team", "team-namespace-team-b"]
    namespace = objects["team-namespace-ml-team"]
    assert namespace["spec"]["forProvider"]["manifest"]["metadata"]["name"] == "ml-team"
    assert namespace["spec"]["managementPolicies"] == [
        "Observe",
        "Create",
        "Update",
        "LateInitialize",
    ]
    for key in SHARED_KEYS:
        shared = objects[f"{key}-team-b"]["spec"]["forProvider"]["manifest"]
        assert shared["metadata"]["namespace"] == "team-b"
    # The ml-team replica is gone: its namespace's Objects are no longer desired, so
    # Crossplane deletes them; the Namespace Object's policies leave the namespace standing.
    observed = {k: {"status": {"conditions": []}} for k in objects}
    left = [*WORLD, replica(name="b", namespace="team-b")]
    first = stubs.v1.RunFunction(request(cluster, observed=observed))
    rsp = stubs.v1.RunFunction(request(cluster, observed=observed, required=satisfy(first, left)))
    after = desired(rsp)
    assert not [k for k in after if k.endswith("-ml-team")]
    assert "team-namespace-team-b" in after and all(k in after for k in SHARED_KEYS)
