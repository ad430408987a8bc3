"""Benchmark of `modelplane fleet`: its own work on examples/ and on a 1,000-cluster fleet.

The 1,000-cluster fleet is bench_cli's (1,000 Ready clusters of four pools, 10,000 replicas
of other deployments, one deployment of 10 replicas), written once to a temporary
directory. For each input: the median in-process time of the verb's own work after the
input is loaded (the reconcile, the capacity from the occupancy, the table and the JSON),
and of the whole command as a process. Prints figures, asserts nothing.
Target: under a second of its own work on the 1,000-cluster fleet.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_cli import whole_process, write_fleet

from modelplane import manifests, memo
from modelplane.cli.fleet import fleet_json, fleet_table
from modelplane.cli.inputs import fleet_of
from modelplane.fleetview.capacity import capacity
from modelplane.fleetview.state import reconciled

REPO = Path(__file__).resolve().parents[1]
RUNS = 3


def own_work(directory: str) -> tuple[float, float, float]:
    """Median seconds of (reconcile, capacity, table + json) after one load of ``directory``."""
    loaded = manifests.load([directory])
    assert loaded.ok, loaded.problems[:3]
    inputs = fleet_of(loaded)
    phases: list[tuple[float, float, float]] = []
    for _ in range(RUNS):
        memo.clear_all()
        start = time.perf_counter()
        state = reconciled(inputs)
        mid = time.perf_counter()
        fleet = capacity(state)
        end = time.perf_counter()
        fleet_table(fleet)
        json.dumps(fleet_json(fleet), indent=2)
        phases.append((mid - start, end - mid, time.perf_counter() - end))
    return tuple(statistics.median(p[i] for p in phases) for i in range(3))  # type: ignore[return-value]


def row(label: str, directory: str) -> None:
    reconcile, view, write = own_work(directory)
    total = reconcile + view + write
    wall = whole_process(["fleet", directory], RUNS)
    print(
        f"{label:>22} {reconcile * 1000:13.0f} {view * 1000:12.0f} {write * 1000:12.0f} "
        f"{total * 1000:10.0f} {wall * 1000:11.0f}"
    )
    sys.stdout.flush()


def main() -> None:
    """examples/, then the 1,000-cluster fleet."""
    print(
        f"{'input':>22} {'reconcile ms':>13} {'capacity ms':>12} {'output ms':>12} "
        f"{'own ms':>10} {'process ms':>11}"
    )
    row("examples/", str(REPO / "examples"))
    with tempfile.TemporaryDirectory() as tmp:
        write_fleet(Path(tmp), 1000, 10000, 10)
        row("1000 x 10000 x 10", tmp)
    print("target: own work under 1000 ms on 1000 clusters")


if __name__ == "__main__":
    main()
