"""status.gpuPools derived from spec.nodePools and the classes (docs/api.md, "InferenceCluster: what
is read and derived").
"""

from __future__ import annotations

from typing import Any

from modelplane.api import InferenceClass, InferenceCluster
from modelplane.api.inferencecluster import derived_gpu_pools
from tests.builders import gpu_device, inference_class

H100 = InferenceClass.model_validate(
    inference_class(
        "h100",
        gpu_device(memory="", claim=None),
        {"name": "nic", "claim": "Synthetic", "driver": "nic.example.com"},
    )
)


def cluster(node_pools: list[dict[str, Any]]) -> InferenceCluster:
    return InferenceCluster.model_validate(
        {
            "apiVersion": "modelplane.ai/v1alpha1",
            "kind": "InferenceCluster",
            "metadata": {"name": "c1"},
            "spec": {
                "cluster": {"source": "GKE", "gke": {"region": "us"}},
                "nodePools": node_pools,
            },
        }
    )


def test_pools_follow_node_pools_in_order_with_class_devices_defaulted() -> None:
    pools = derived_gpu_pools(
        cluster(
            [
                {"name": "big", "className": "h100", "nodeCount": 2, "maxNodeCount": 6},
                {"name": "small", "className": "h100"},
            ]
        ),
        {"h100": H100},
    )
    assert pools is not None
    assert [p.to_wire() for p in pools] == [
        {
            "name": "big",
            "nodes": 6,  # the autoscaling ceiling counts as capacity
            "devices": [
                {
                    "name": "gpu",
                    "claim": "DRA",
                    "driver": "gpu.nvidia.com",
                    "deviceClassName": "gpu.nvidia.com",
                    "count": 8,
                },
                {"name": "nic", "claim": "Synthetic", "driver": "nic.example.com", "count": 1},
            ],
        },
        {
            "name": "small",
            "nodes": 1,  # nodeCount defaults to 1
            "devices": [
                {
                    "name": "gpu",
                    "claim": "DRA",
                    "driver": "gpu.nvidia.com",
                    "deviceClassName": "gpu.nvidia.com",
                    "count": 8,
                },
                {"name": "nic", "claim": "Synthetic", "driver": "nic.example.com", "count": 1},
            ],
        },
    ]


def test_a_missing_class_derives_nothing() -> None:
    node_pools = [{"name": "a", "className": "h100"}, {"name": "b", "className": "gone"}]
    assert derived_gpu_pools(cluster(node_pools), {"h100": H100}) is None


def test_no_node_pools_derives_nothing() -> None:
    pooled = cluster([{"name": "a", "className": "h100"}])
    bare = pooled.model_copy(update={"spec": pooled.spec.model_copy(update={"node_pools": None})})
    assert derived_gpu_pools(bare, {"h100": H100}) is None
