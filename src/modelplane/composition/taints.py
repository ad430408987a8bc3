"""Which node taints a member's pods tolerate: those of the pool they are pinned to, by the
DRA drivers of its devices (docs/composition.md, "Tolerations by pool").

Every pod composed for a member carries a node selector on its pool and, beside it, a
toleration for each taint the pool's devices imply. A toleration of a taint the pool does
not carry changes nothing, so an unknown driver costs nothing; a missing one leaves the
pod Pending forever, so every pool at least tolerates the NVIDIA taint it always did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from modelplane.api import InferenceCluster, ModelReplica
from modelplane.composition.types import Json

NVIDIA_GPU_TAINT: Final = "nvidia.com/gpu"
"""GKE, AKS and NVIDIA's docs taint GPU nodes ``nvidia.com/gpu`` (NoSchedule)."""
AMD_GPU_TAINT: Final = "amd.com/gpu"
"""AMD GPU nodes are tainted ``amd.com/gpu`` (NoSchedule): the key our AMD DRA driver's
kubelet plugin tolerates (docs/stack.md) and upstream Modelplane's AMD stack and its
multi-accelerator design use (modelplaneai/modelplane ``design/multi-accelerator.md`` @ 68c08e5c)."""
CPU_POOL_TAINT: Final = "modelplane.ai/cpu"
"""Upstream Modelplane's CPU pools carry ``modelplane.ai/cpu=true:NoSchedule`` so that system
components stay off them (modelplaneai/modelplane ``design/cpu-inference.md`` @ 6932526a, section Taint)."""

# The taint a pool carries by the DRA driver of one of its devices; a claimed request's
# DeviceClass stands for its driver (each driver here names its DeviceClass after itself,
# and mig.nvidia.com is the NVIDIA driver's MIG class).
TAINT_BY_DRIVER: Final[Mapping[str, str]] = {
    "gpu.nvidia.com": NVIDIA_GPU_TAINT,
    "mig.nvidia.com": NVIDIA_GPU_TAINT,
    "gpu.amd.com": AMD_GPU_TAINT,
    "dra.cpu": CPU_POOL_TAINT,
}
TAINT_ORDER: Final = (NVIDIA_GPU_TAINT, AMD_GPU_TAINT, CPU_POOL_TAINT)
# A pool none of whose drivers is known keeps the toleration every pod always had.
DEFAULT_TAINTS: Final = (NVIDIA_GPU_TAINT,)


def toleration(key: str) -> Json:
    """Tolerate every NoSchedule taint with ``key``, whatever its value."""
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


def pool_taints(drivers: Iterable[str]) -> tuple[str, ...]:
    """The taint keys of a pool whose devices have these drivers, in ``TAINT_ORDER``."""
    keys = {TAINT_BY_DRIVER[d] for d in drivers if d in TAINT_BY_DRIVER}
    return tuple(k for k in TAINT_ORDER if k in keys) or DEFAULT_TAINTS


def pool_drivers(
    replica: ModelReplica, cluster: InferenceCluster | None = None
) -> dict[str, frozenset[str]]:
    """The DRA drivers known of each pool the replica's members are pinned to.

    From the cluster's published ``status.gpuPools`` (every device, claimed or synthetic)
    and from what the replica's members claim on each pool (a request's DeviceClass), so a
    claimless leader riding on its worker's pool tolerates that pool's taint, even when
    the cluster has stopped publishing the pool.
    """
    found: dict[str, set[str]] = {}
    status = cluster.status if cluster is not None else None
    for pool in (status.gpu_pools if status is not None else None) or ():
        found.setdefault(pool.name, set()).update(d.driver for d in pool.devices or ())
    for engine in replica.spec.engines:
        for member in engine.members:
            found.setdefault(member.node_pool_name, set()).update(
                r.device_class_name for r in member.device_requests or ()
            )
    return {name: frozenset(drivers) for name, drivers in found.items()}
