"""Benchmark of the fleet scheduler (issue: fleet scheduler). Prints figures; asserts nothing.

Fleets of 10, 100 and 1000 clusters x 4 pools, with 0, 1000 and 10000 existing replicas of
other deployments, placing 10 and 100 replicas: the median in-process time of one
``schedule`` call, and for a subset the median time of the whole ``modelplane schedule``
command (the fleet written to a temporary directory). Ends with the fitted growth exponent
of the in-process time in (clusters + existing replicas).

Target: 1000 clusters, 10000 existing, 100 desired in under 200 ms in-process.
"""

from __future__ import annotations

import gc
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from modelplane.api import InferenceCluster, ModelDeployment, ModelReplica
from modelplane.cel import clear_caches
from modelplane.manifests import load
from modelplane.scheduling import CACHE_NONE, schedule

SIZES = (10, 100, 1000)
EXISTING = (0, 1000, 10000)
DESIRED = (10, 100)
CLI_SUBSET = {
    (10, 0): 3,
    (100, 1000): 3,
    (1000, 1000): 1,
}  # (clusters, existing) -> runs, 100 desired
REPEAT = 5

GPU_SEL = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0'
KINDS = (
    ("h100", "81559Mi", 8),
    ("h200", "143771Mi", 8),
    ("l4", "23034Mi", 1),
    ("a100", "40960Mi", 4),
)


def cluster_doc(i: int) -> dict[str, Any]:
    """A Ready cluster with four pools of 8 nodes."""
    pools = [
        {
            "name": name,
            "nodes": 8,
            "devices": [
                {"name": "gpu", "claim": "DRA", "driver": "gpu.nvidia.com", "deviceClassName": f"{name}.nvidia.com",
                 "count": count, "capacity": {"memory": {"value": memory}}},
            ],
        }
        for name, memory, count in KINDS
    ]  # fmt: skip
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": f"cluster-{i:04d}", "labels": {"region": ("us", "eu")[i % 2]}},
        "spec": {"cluster": {"source": "Existing", "existing": {"secretRef": {"name": "kc"}}}},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}],
            "gateway": {"address": f"10.0.{i // 250}.{i % 250}"},
            "gpuPools": pools,
        },
    }


def existing_doc(i: int, clusters: int) -> dict[str, Any]:
    """A replica of another deployment: one GPU on some pool of some cluster."""
    name, _, _ = KINDS[i % 4]
    cluster = f"cluster-{(i * 7919) % clusters:04d}"
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {
            "name": f"other-{i:05d}",
            "namespace": f"team-{i % 10}",
            "labels": {
                "modelplane.ai/deployment": f"other-{i % 50}",
                "modelplane.ai/deployment-namespace": f"team-{i % 10}",
                "modelplane.ai/cluster": cluster,
                "modelplane.ai/replica-index": str(i // 50),
            },
        },
        "spec": {
            "clusterName": cluster,
            "engines": [
                {
                    "name": "engine",
                    "copies": 1,
                    "members": [
                        {
                            "role": "Standalone",
                            "nodePoolName": name,
                            "deviceRequests": [
                                {"name": "gpu", "deviceClassName": f"{name}.nvidia.com", "count": 1,
                                 "selectors": [{"cel": GPU_SEL}]}
                            ],
                            "template": {"spec": {"containers": [{"name": "engine", "image": "img"}]}},
                        }
                    ],
                }
            ],
        },
    }  # fmt: skip


def deployment_doc(replicas: int) -> dict[str, Any]:
    """The seed-like deployment: one Standalone engine asking for one GPU of 20Gi or more."""
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "qwen3-8b", "namespace": "ml-team"},
        "spec": {
            "replicas": replicas,
            "template": {
                "spec": {
                    "engines": [
                        {
                            "name": "qwen3-8b",
                            "members": [
                                {
                                    "nodeSelector": {
                                        "devices": [
                                            {"name": "gpu", "selectors": [{"cel": GPU_SEL}]}
                                        ]
                                    },
                                    "template": {
                                        "spec": {
                                            "containers": [{"name": "engine", "image": "vllm"}]
                                        }
                                    },
                                }
                            ],
                        }
                    ]
                }
            },
        },
    }


def in_process(
    clusters: list[InferenceCluster], existing: list[ModelReplica], desired: int
) -> tuple[float, float]:
    """(cold, median warm) seconds of one schedule call."""
    d = ModelDeployment.model_validate(deployment_doc(desired))
    clear_caches()
    gc.collect()
    start = time.perf_counter()
    schedule(d, clusters, [], CACHE_NONE, existing)
    cold = time.perf_counter() - start
    times = []
    for _ in range(REPEAT):
        gc.collect()  # start every run from the same heap, not from the last run's garbage
        start = time.perf_counter()
        schedule(d, clusters, [], CACHE_NONE, existing)
        times.append(time.perf_counter() - start)
    return cold, statistics.median(times)


def whole_command(n: int, existing: int, desired: int, runs: int) -> tuple[float, float]:
    """Median seconds of `modelplane schedule DIR -o json` over a fleet written to a temp dir,
    and the seconds of loading (parsing and validating) that directory in-process."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "clusters.yaml").write_text(yaml.safe_dump_all([cluster_doc(i) for i in range(n)]))
        (root / "replicas.yaml").write_text(
            yaml.safe_dump_all([existing_doc(i, n) for i in range(existing)])
        )
        (root / "deployment.yaml").write_text(yaml.safe_dump(deployment_doc(desired)))
        command = [sys.executable, "-m", "modelplane", "schedule", tmp, "-o", "json"]
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env={**os.environ})
            times.append(time.perf_counter() - start)
        start = time.perf_counter()
        load([tmp])
        return statistics.median(times), time.perf_counter() - start


def fitted_exponent(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of log(time) against log(size)."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def main() -> None:
    """Run every size and print a table."""
    print(
        f"{'clusters':>8} {'existing':>8} {'desired':>7} {'cold ms':>9} {'median ms':>10} "
        f"{'command ms':>11} {'of it load ms':>14}"
    )
    growth: dict[int, list[tuple[float, float]]] = {d: [] for d in DESIRED}
    for n in SIZES:
        clusters = [InferenceCluster.model_validate(cluster_doc(i)) for i in range(n)]
        for existing in EXISTING:
            replicas = [ModelReplica.model_validate(existing_doc(i, n)) for i in range(existing)]
            for desired in DESIRED:
                cold, median = in_process(clusters, replicas, desired)
                growth[desired].append((n + existing, median))
                command = ""
                if desired == 100 and (n, existing) in CLI_SUBSET:
                    total, loading = whole_command(n, existing, desired, CLI_SUBSET[(n, existing)])
                    command = f"{total * 1000:11.0f} {loading * 1000:14.0f}"
                print(
                    f"{n:8d} {existing:8d} {desired:7d} {cold * 1000:9.1f} {median * 1000:10.1f} {command}"
                )
                sys.stdout.flush()
    for desired, points in growth.items():
        print(
            f"growth exponent in (clusters + existing), {desired} desired: {fitted_exponent(points):.2f}"
        )


if __name__ == "__main__":
    main()
