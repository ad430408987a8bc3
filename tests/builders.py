"""Builders every test package shares: the seed's deployment, the standard cluster, devices, selectors.

One home for the inputs the tests agree on: the seed's ``qwen3-8b`` ModelDeployment
(../shared/seed/modeldeployment-reference.txt, its Example), the replica the deployment
function writes for it (docs/composition.md, "Examples"), the standard H100 device and pool, the DRA
selector strings and the labels of a replica. Every builder returns fresh plain dicts in
camelCase, as a user writes them; the package modules (``composition/builders.py``,
``scheduling/builders.py``, ``reconcile/fleet.py``, ``runtime/helpers.py``) put them in the
form their layer takes (a validated model, an object as the API server returns it) and keep
only what is specific to that layer.

Wire strings (label keys, API group) are spelled here, not imported from ``modelplane``:
a test that read them from the code under test could not notice when they change.
"""

from __future__ import annotations

from typing import Any

GV = "modelplane.ai/v1alpha1"
# The managed resource kinds a provisioned GKE cluster composes (docs/provisioning.md, "GKE").
GKE_MANAGED_KINDS = frozenset(
    {
        "Network",
        "Subnetwork",
        "Router",
        "RouterNAT",
        "ProjectService",
        "ServiceAccount",
        "ServiceAccountKey",
        "ProjectIAMMember",
        "Cluster",
        "NodePool",
    }
)
# The NVIDIA DRA driver's name; its DeviceClass carries the same name (k8s-dra-driver-gpu).
GPU_DRIVER = "gpu.nvidia.com"
# ROCm/k8s-gpu-dra-driver's driver and DeviceClass; and kubernetes-sigs/dra-driver-cpu's.
AMD_DRIVER = "gpu.amd.com"
CPU_DRIVER = "dra.cpu"
# The node taints our pods tolerate by pool (docs/composition.md, "Tolerations by pool").
NVIDIA_TAINT = "nvidia.com/gpu"
AMD_TAINT = "amd.com/gpu"
CPU_TAINT = "modelplane.ai/cpu"
H100_MEMORY = "81559Mi"  # what the driver publishes for an 80 GB H100
L4_MEMORY = "23034Mi"  # ... and for a 24 GB L4
# The provider config of us-east-1 in the worked example.
PROVIDER_CONFIG = "us-east-1-cluster-kubeconfig-3f87b"

SEED_IMAGE = "vllm/vllm-openai:v0.23.0"
SEED_ARGS = ("--model=Qwen/Qwen3-8B", "--served-model-name=$(MODELPLANE_SERVED_MODEL_NAME)")


def memory_selector(at_least: str, driver: str = GPU_DRIVER) -> str:
    """A DRA CEL selector: the device's memory capacity is at least ``at_least``."""
    return f'device.capacity["{driver}"].memory.compareTo(quantity("{at_least}")) >= 0'


GPU_SELECTOR = memory_selector("20Gi")
# The seed writes the selector as a YAML block scalar (`cel: |`), which keeps a newline.
SEED_SELECTOR = GPU_SELECTOR + "\n"


def seed_container() -> dict[str, Any]:
    """The seed's engine container."""
    return {"name": "engine", "image": SEED_IMAGE, "args": list(SEED_ARGS)}


def selector_request(name: str = "gpu", count: int = 1, *cels: str) -> dict[str, Any]:
    """A ``nodeSelector.devices`` request, the seed's selector unless ``cels`` are given."""
    return {
        "name": name,
        "count": count,
        "selectors": [{"cel": c} for c in cels or (SEED_SELECTOR,)],
    }


def stamped_request(
    count: int = 1,
    name: str = "gpu",
    device_class: str = GPU_DRIVER,
    selector: str = SEED_SELECTOR,
) -> dict[str, Any]:
    """A resolved ``deviceRequests`` entry, as the scheduler stamps it on a replica member."""
    return {
        "name": name,
        "deviceClassName": device_class,
        "count": count,
        "selectors": [{"cel": selector}],
    }


def seed_template_spec(selector: str = SEED_SELECTOR) -> dict[str, Any]:
    """The seed deployment's ``spec.template.spec``: one Standalone engine with one GPU."""
    return {
        "engines": [
            {
                "name": "qwen3-8b",
                "members": [
                    {
                        "role": "Standalone",
                        "nodeSelector": {"devices": [selector_request("gpu", 1, selector)]},
                        "template": {"spec": {"containers": [seed_container()]}},
                    }
                ],
            }
        ]
    }


def seed_deployment(
    replicas: int = 2,
    name: str = "qwen3-8b",
    namespace: str = "ml-team",
    selector: str = SEED_SELECTOR,
) -> dict[str, Any]:
    """The seed's ModelDeployment manifest."""
    return {
        "apiVersion": GV,
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "template": {"spec": seed_template_spec(selector)}},
    }


def seed_replica_engine(name: str = "qwen3-8b") -> dict[str, Any]:
    """The seed's engine as a replica carries it: pinned to pool ``h100``, its GPU stamped."""
    return {
        "name": name,
        "copies": 1,
        "members": [
            {
                "role": "Standalone",
                "nodePoolName": "h100",
                "deviceRequests": [stamped_request()],
                "template": {"spec": {"containers": [seed_container()]}},
            }
        ],
    }


def replica_labels(
    deployment: str = "qwen3-8b",
    namespace: str = "ml-team",
    cluster: str = "us-east-1",
    index: int | str | None = 0,
    remote: str | None = "",
) -> dict[str, str]:
    """The labels the deployment function puts on a replica (no index label when ``None``).

    ``remote``: where its remote objects are (the team namespace named for ``namespace`` by
    default; None: an earlier release's replica, in the shared ``default``)."""
    labels = {
        "modelplane.ai/deployment": deployment,
        "modelplane.ai/deployment-namespace": namespace,
        "modelplane.ai/cluster": cluster,
    }
    if remote is not None:
        labels["modelplane.ai/remote-namespace"] = remote or namespace
    if index is not None:
        labels["modelplane.ai/replica-index"] = str(index)
    return labels


def seed_replica(cluster: str = "us-east-1", index: int = 0) -> dict[str, Any]:
    """A Ready ModelReplica manifest of the seed deployment, pinned to ``cluster``."""
    return {
        "apiVersion": GV,
        "kind": "ModelReplica",
        "metadata": {
            "name": f"qwen3-8b-{cluster}-{index}",
            "namespace": "ml-team",
            "labels": replica_labels(cluster=cluster, index=index),
        },
        "spec": {"clusterName": cluster, "engines": [seed_replica_engine()]},
        "status": {"conditions": [ready_condition()]},
    }


def ready_condition(ready: bool | str = True, reason: str = "Available") -> dict[str, str]:
    """A Ready condition; ``ready`` as a bool or as the status string itself."""
    status = ready if isinstance(ready, str) else ("True" if ready else "False")
    return {"type": "Ready", "status": status, "reason": reason}


def gpu_device(
    count: int = 8,
    memory: str = H100_MEMORY,
    *,
    name: str = "gpu",
    claim: str | None = "DRA",
    device_class: str | None = GPU_DRIVER,
    driver: str = GPU_DRIVER,
    attributes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A device of a pool or class, 8 H100s by default.

    ``claim=None`` leaves the claim out (a class's device, where it is optional); a
    DeviceClass is named only for a DRA device; no memory, no capacity.
    """
    device: dict[str, Any] = {"name": name}
    if claim is not None:
        device["claim"] = claim
    device["driver"] = driver
    if device_class is not None and claim in ("DRA", None):
        device["deviceClassName"] = device_class
    device["count"] = count
    if memory:
        device["capacity"] = {"memory": {"value": memory}}
    if attributes:
        device["attributes"] = attributes
    return device


def amd_device(count: int = 8, memory: str = "192Gi") -> dict[str, Any]:
    """A device of an AMD Instinct pool, claimed through the AMD DRA driver's class."""
    return gpu_device(count, memory, driver=AMD_DRIVER, device_class=AMD_DRIVER)


def cpu_device(cpus: str = "6") -> dict[str, Any]:
    """A node's CPUs as the CPU DRA driver publishes them in grouped mode: one device whose
    ``cpu`` capacity is the allocatable CPUs (upstream Modelplane's CPU class shape)."""
    return {
        "name": "cpu",
        "claim": "DRA",
        "driver": CPU_DRIVER,
        "deviceClassName": CPU_DRIVER,
        "count": 1,
        "capacity": {"cpu": {"value": cpus}},
    }


def driver_selector(driver: str) -> str:
    """A DRA CEL selector: any device of ``driver``."""
    return f'device.driver == "{driver}"'


def toleration(key: str) -> dict[str, str]:
    """The toleration a pod gets for a pool taint."""
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


def gpu_pool(name: str, nodes: int, *devices: dict[str, Any]) -> dict[str, Any]:
    """A published ``status.gpuPools`` entry."""
    return {"name": name, "nodes": nodes, "devices": list(devices)}


def inference_class(name: str = "h100-8x", *devices: dict[str, Any]) -> dict[str, Any]:
    """An InferenceClass manifest; one node of 8 H100s (claim left to its default) by default."""
    return {
        "apiVersion": GV,
        "kind": "InferenceClass",
        "metadata": {"name": name},
        "spec": {"devices": list(devices) or [gpu_device(claim=None)]},
    }


def inference_cluster(
    name: str = "us-east-1",
    *,
    secret: str = "kubeconfig",
    stack: str | None = None,
    taints: list[dict[str, Any]] | None = None,
    node_pools: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A bring-your-own (``source: Existing``) InferenceCluster manifest.

    Only the keys given are written (``labels={}`` writes an empty map), so each package
    keeps the exact manifest it tested before.
    """
    spec: dict[str, Any] = {
        "cluster": {"source": "Existing", "existing": {"secretRef": {"name": secret}}}
    }
    if stack is not None:
        spec["stack"] = stack
    if taints:
        spec["taints"] = taints
    if node_pools:
        spec["nodePools"] = node_pools
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = labels
    out: dict[str, Any] = {
        "apiVersion": GV,
        "kind": "InferenceCluster",
        "metadata": metadata,
        "spec": spec,
    }
    if status is not None:
        out["status"] = status
    return out


def cluster_status(
    *,
    ready: bool | str | None = True,
    gateway: str | None = "203.0.113.10",
    pools: list[dict[str, Any]] | None = None,
    provider_config: str | None = None,
    stack: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An InferenceCluster status: Ready, a gateway, pools, provider config and
    ``status.stack`` as given."""
    status: dict[str, Any] = {}
    if ready is not None:
        status["conditions"] = [ready_condition(ready)]
    if gateway is not None:
        status["gateway"] = {"address": gateway}
    if pools:
        status["gpuPools"] = pools
    if provider_config is not None:
        status["providerConfigRef"] = {"name": provider_config}
    if stack is not None:
        status["stack"] = stack
    return status


def stack_component(
    name: str, version: str, phase: str, message: str | None = None
) -> dict[str, Any]:
    """One ``status.stack.items`` entry: a component, its version and where it stands."""
    item: dict[str, Any] = {"name": name, "version": version, "phase": phase}
    if message is not None:
        item["message"] = message
    return item


def stack_status(
    phase: str, *items: dict[str, Any], components: str | None = None
) -> dict[str, Any]:
    """A published ``status.stack``; ``components`` follows the phase unless given
    (``RequirementsMet`` and ``RequirementsNotMet`` are a Provided stack's)."""
    if components is None:
        components = "Provided" if phase.startswith("Requirements") else "Managed"
    return {"components": components, "phase": phase, "items": list(items)}


def model_cache(
    name: str = "qwen",
    namespace: str = "ml-team",
    size_gib: int = 20,
    match_labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A ModelCache of the seed's model from Hugging Face."""
    spec: dict[str, Any] = {
        "source": "HuggingFace",
        "huggingFace": {"repo": "Qwen/Qwen3-8B", "sizeGiB": size_gib},
    }
    if match_labels is not None:
        spec["clusterSelector"] = {"matchLabels": match_labels}
    return {
        "apiVersion": GV,
        "kind": "ModelCache",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def gke_recipe(
    machine_type: str = "a3-highgpu-8g", accelerator: str = "nvidia-h100-80gb", count: int = 8
) -> dict[str, Any]:
    """An InferenceClass's ``spec.provisioning`` for GKE."""
    return {
        "provider": "GKE",
        "gke": {
            "machineType": machine_type,
            "accelerator": {"type": accelerator, "count": count},
        },
    }


def gke_cluster(
    name: str = "us-east-1",
    *,
    region: str = "us-east4",
    node_pools: list[dict[str, Any]] | None = None,
    taints: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A ``source: GKE`` InferenceCluster manifest: one pool h100 of class h100-8x by default."""
    spec: dict[str, Any] = {
        "cluster": {"source": "GKE", "gke": {"region": region}},
        "nodePools": node_pools or [{"name": "h100", "className": "h100-8x", "nodeCount": 2}],
    }
    if taints:
        spec["taints"] = taints
    return {"apiVersion": GV, "kind": "InferenceCluster", "metadata": {"name": name}, "spec": spec}


FRONT_DOOR_CONFIG = "frontdoor-cluster-kubeconfig-0a1b2"


def front_door_cluster(
    name: str = "frontdoor",
    *,
    implementation: str | None = "EnvoyGateway",
    ready: bool = True,
    provider_config: str | None = FRONT_DOOR_CONFIG,
) -> dict[str, Any]:
    """An Existing InferenceCluster a gateway may run on: declaring ``implementation``, Ready and
    publishing ``provider_config`` as given."""
    cluster = inference_cluster(
        name, status=cluster_status(ready=ready, gateway=None, provider_config=provider_config)
    )
    if implementation is not None:
        cluster["spec"]["gateway"] = {"implementation": implementation}
    return cluster


def inference_gateway(
    name: str = "default",
    cluster: str = "frontdoor",
    *,
    created: str | None = None,
    address: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """An InferenceGateway on ``cluster``; ``spec`` adds fields (camelCase), ``address`` a status."""
    metadata: dict[str, Any] = {"name": name}
    if created is not None:
        metadata["creationTimestamp"] = created
    out: dict[str, Any] = {
        "apiVersion": GV,
        "kind": "InferenceGateway",
        "metadata": metadata,
        "spec": {"clusterName": cluster, **spec},
    }
    if address is not None:
        out["status"] = {"address": address}
    return out
