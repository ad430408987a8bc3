"""Benchmark of the whole commands: `schedule` and `render` as processes.

Fleets from bench_scheduler's generators (Ready clusters of four pools, replicas of other
deployments, one seed-like deployment), each replica carrying the pod template a rendered
replica carries (a vLLM engine: image, arguments, port, environment, resources; about
1.4 KB of YAML a replica, so 15 MB at 10,000 replicas, like the issue's 14 MB fleet),
written once as YAML to a temporary directory:

* 1,000 clusters x 4 pools, 10,000 existing replicas, 10 and 100 desired;
* 100 clusters, 1,000 existing, 100 desired;
* 10 clusters, 100 existing, 10 desired.

For each: the median wall time of `modelplane schedule DIR -o json` and of
`modelplane render DIR -o json` as whole processes (interpreter start and imports
included), then the time split of one in-process run of the same steps the commands take:
load (read and parse the files), validate (every document), schedule (the fleet
reconcile), compose (render's objects), write (the output text). Prints figures, asserts
nothing. Targets: schedule at 1,000 x 10,000 x 10 in at most 1.7 s, at
1,000 x 10,000 x 100 in at most 5 s.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from bench_scheduler import cluster_doc, deployment_doc, existing_doc

from modelplane import manifests, memo
from modelplane.api import InferenceGateway, ModelService
from modelplane.cli.inputs import fleet_of
from modelplane.cli.render import serialise
from modelplane.cli.schedule import to_json
from modelplane.reconcile.deployment import reconcile_fleet
from modelplane.runtime.local.render import (
    render,
    render_caches,
    render_clusters,
    render_endpoints,
    render_fronts,
)

# (clusters, existing replicas, desired replicas, whole-process runs per command)
FLEETS = (
    (1000, 10000, 10, 3),
    (1000, 10000, 100, 3),
    (100, 1000, 100, 3),
    (10, 100, 10, 3),
)
PHASES = ("load", "validate", "schedule", "compose", "write")
_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
T = TypeVar("T")


# What a rendered replica's engine runs (composition.md's vLLM container, trimmed).
SERVING_TEMPLATE: dict[str, Any] = {
    "spec": {
        "containers": [
            {
                "name": "engine",
                "image": "vllm/vllm-openai:v0.11.0",
                "args": [
                    "--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "1",
                    "--max-model-len", "32768", "--gpu-memory-utilization", "0.9",
                    "--port", "8000",
                ],
                "ports": [{"name": "http", "containerPort": 8000}],
                "env": [
                    {"name": "HF_HOME", "value": "/models"},
                    {"name": "VLLM_LOGGING_LEVEL", "value": "INFO"},
                ],
                "resources": {"requests": {"cpu": "8", "memory": "64Gi"}, "limits": {"memory": "64Gi"}},
            }
        ]
    }
}  # fmt: skip


def served_replica(i: int, clusters: int) -> dict[str, Any]:
    """bench_scheduler's replica of another deployment, with a real engine's pod template."""
    doc = existing_doc(i, clusters)
    doc["spec"]["engines"][0]["members"][0]["template"] = SERVING_TEMPLATE
    return doc


def write_fleet(root: Path, clusters: int, existing: int, desired: int) -> int:
    """The fleet as three YAML files, as a user's snapshot would be; its size in bytes."""

    def dump(name: str, docs: list[dict[str, Any]]) -> int:
        return (root / name).write_text(yaml.dump_all(docs, Dumper=_Dumper))

    return (
        dump("clusters.yaml", [cluster_doc(i) for i in range(clusters)])
        + dump("replicas.yaml", [served_replica(i, clusters) for i in range(existing)])
        + dump("deployment.yaml", [deployment_doc(desired)])
    )


def whole_process(args: Sequence[str], runs: int) -> float:
    """Median seconds of `modelplane ARGS...` as a process, output discarded."""
    command = [sys.executable, "-m", "modelplane", *args]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def timed(split: dict[str, float], phase: str, step: Callable[[], T]) -> T:
    start = time.perf_counter()
    value = step()
    split[phase] = split.get(phase, 0.0) + time.perf_counter() - start
    return value


def in_process_split(directory: str, verb: str) -> dict[str, float]:
    """Seconds per phase of one cold in-process run of the command's steps.

    The steps are the commands' own (cli/inputs.load_valid, cli/schedule.run,
    cli/render.run), taken apart here so that each can be timed; the garbage collector is
    paused while loading, as load_valid pauses it. A file read with a forked child has its
    documents validated while the child reads (fastyaml.read's judge): that validation is
    in "load", and "validate" is the rest.
    """
    memo.clear_all()
    gc.collect()
    split: dict[str, float] = {}
    files = [file for path in [directory] for file in manifests.expand(path)]
    gc.disable()
    docs = timed(split, "load", lambda: [d for f in files for d in manifests.read_file(f)])
    loaded = manifests.Loaded()
    seen: set[tuple[str, str, str]] = set()

    def validate() -> None:
        for doc in docs:
            if isinstance(doc, str):
                loaded.problems.append(doc)
            else:
                manifests._add_document(doc, loaded, seen)

    timed(split, "validate", validate)
    gc.freeze()
    gc.enable()
    assert loaded.ok, loaded.problems[:3]
    fleet = fleet_of(loaded)
    gc.disable()  # as the verbs compute and write with the collector off
    if verb == "schedule":
        results = timed(split, "schedule", lambda: reconcile_fleet(fleet))
        timed(split, "write", lambda: json.dumps(to_json(results, explain=False), indent=2))
    else:
        rendered = timed(split, "compose", lambda: render(fleet))

        def compose_rest() -> list[dict[str, Any]]:
            clusters = render_clusters(fleet, rendered)
            caches = render_caches(fleet)
            backends = render_endpoints(fleet, rendered)
            fronts = render_fronts(
                loaded.of_kind(InferenceGateway),
                loaded.of_kind(ModelService),
                backends,
                fleet.clusters,
            )
            objects = [o for r in rendered for o in r.in_order()]
            objects.extend(o for c in clusters for o in c.in_order())
            objects.extend(o for c in caches for o in c.in_order())
            objects.extend(o for b in backends for o in b.in_order())
            objects.extend(o for f in fronts for o in f.in_order())
            return objects

        objects = timed(split, "compose", compose_rest)
        timed(split, "write", lambda: serialise(objects, "json"))
    gc.enable()
    gc.unfreeze()
    return split


def main() -> None:
    """Every fleet, both commands: one row each."""
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    header = " ".join(f"{p + ' ms':>12}" for p in PHASES)
    print(
        f"{'clusters':>8} {'existing':>8} {'desired':>7} {'MB':>5} {'verb':>8} "
        f"{'process ms':>11} {header}"
    )
    for clusters, existing, desired, runs in FLEETS:
        with tempfile.TemporaryDirectory() as tmp:
            size = write_fleet(Path(tmp), clusters, existing, desired) / 1e6
            for verb in ("schedule", "render"):
                wall = whole_process([verb, tmp, "-o", "json"], runs)
                split = in_process_split(tmp, verb)
                cells = " ".join(
                    f"{split[p] * 1000:12.0f}" if p in split else f"{'-':>12}" for p in PHASES
                )
                print(
                    f"{clusters:8d} {existing:8d} {desired:7d} {size:5.1f} {verb:>8} "
                    f"{wall * 1000:11.0f} {cells}"
                )
                sys.stdout.flush()
    print("targets: schedule 1000 x 10000 x 10 <= 1700 ms, 1000 x 10000 x 100 <= 5000 ms")


if __name__ == "__main__":
    main()
