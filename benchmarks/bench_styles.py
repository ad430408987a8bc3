"""Benchmark of the whole commands on one fleet written in several styles.

The fleet of bench_cli (1,000 InferenceClusters x 4 pools, 10,000 existing ModelReplicas
with a real engine's pod template, one deployment of 10) is written the ways users and
tools write it, the same values each time:

* ``plain``: block YAML with plain scalars where they are strings (PyYAML's dump, as
  bench_cli writes it);
* ``double-quoted``: every string double-quoted, so each CEL selector carries escaped
  quotes (``"device.capacity[\\"gpu.nvidia.com\\"]..."``), and a comment before each
  document;
* ``single-quoted``: every string single-quoted, keys plain;
* ``flow``: each document in flow style (``{apiVersion: ..., spec: {...}}``);
* ``json``: one ``.json`` file per kind, an array of the objects, indented;
* ``kubectl``: documents as ``kubectl get -o yaml`` prints them: ``uid``,
  ``resourceVersion``, ``generation``, ``creationTimestamp``, annotations (the
  last-applied configuration as a ``|`` block), ``managedFields`` with their ``f:`` and
  ``k:{...}`` keys, and a status on every replica.

For each style: the median wall and CPU time of `modelplane schedule DIR -o json` and
`modelplane render DIR -o json` as whole processes, the load / validate / compute / write
split of one cold in-process run (bench_cli's steps), and how many files took the fast
reader.
With ``MODELPLANE_BEFORE=<src directory of another checkout>`` each process is also run
with that checkout's sources, alternating with this one's, so the two are measured under
the same load. Prints figures, asserts nothing. Targets: every style's `schedule` and `render`
at most 2 s of wall time at 10 desired, 2.5 s at 100, on a 2-core machine.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from bench_cli import in_process_split, served_replica
from bench_scheduler import cluster_doc, deployment_doc

from modelplane import fastyaml, manifests

CLUSTERS, EXISTING, RUNS = 1000, 10000, 3
# Desired replicas of the one deployment (``bench_styles.py 10`` runs only the first).
DESIRED = (10, 100)
_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def fleet(desired: int) -> dict[str, list[dict[str, Any]]]:
    """The fleet's documents by file stem."""
    return {
        "clusters": [cluster_doc(i) for i in range(CLUSTERS)],
        "replicas": [served_replica(i, CLUSTERS) for i in range(EXISTING)],
        "deployment": [deployment_doc(desired)],
    }


def _quoting_dumper(style: str) -> type[yaml.SafeDumper]:
    """A dumper that writes every string value in ``style`` (keys stay plain)."""

    class Quoting(_Dumper):  # type: ignore[valid-type,misc]
        pass

    def string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    def mapping(dumper: yaml.SafeDumper, value: dict[str, Any]) -> yaml.MappingNode:
        node = dumper.represent_dict(value)
        for key, _ in node.value:
            key.style = None  # keys plain, as people write them
        return node

    Quoting.add_representer(str, string)
    Quoting.add_representer(dict, mapping)
    return Quoting


def _block_dumper() -> type[yaml.SafeDumper]:
    """kubectl's writer: a string with a newline as a ``|`` block."""

    class Block(_Dumper):  # type: ignore[valid-type,misc]
        pass

    def string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Block.add_representer(str, string)
    return Block


def kubectl_doc(doc: dict[str, Any], i: int) -> dict[str, Any]:
    """The document as `kubectl get -o yaml` prints it after a `kubectl apply`."""
    applied = json.dumps(doc, separators=(",", ":")) + "\n"
    meta = dict(doc["metadata"])
    meta.update(
        {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied},
            "creationTimestamp": "2026-01-12T09:14:03Z",
            "generation": 1 + i % 3,
            "resourceVersion": str(1_000_000 + i),
            "uid": f"6f1c2d3e-{i:04x}-4a5b-8c9d-{i:012x}",
            "managedFields": [
                {
                    "apiVersion": doc["apiVersion"],
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {
                            "f:annotations": {
                                ".": {},
                                "f:kubectl.kubernetes.io/last-applied-configuration": {},
                            },
                            "f:labels": {".": {}, **{f"f:{k}": {} for k in meta.get("labels", {})}},
                        },
                        "f:spec": {".": {}, **{f"f:{k}": {} for k in doc["spec"]}},
                    },
                    "manager": "kubectl-client-side-apply",
                    "operation": "Update",
                    "time": "2026-01-12T09:14:03Z",
                },
                {
                    "apiVersion": doc["apiVersion"],
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:status": {
                            ".": {},
                            "f:conditions": {
                                ".": {},
                                'k:{"type":"Ready"}': {
                                    ".": {},
                                    "f:lastTransitionTime": {},
                                    "f:reason": {},
                                    "f:status": {},
                                    "f:type": {},
                                },
                            },
                        }
                    },
                    "manager": "crossplane",
                    "operation": "Update",
                    "subresource": "status",
                    "time": "2026-01-12T09:15:41Z",
                },
            ],
        }
    )
    status = doc.get("status") or {
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "Available",
             "lastTransitionTime": "2026-01-12T09:15:41Z", "observedGeneration": 1},
            {"type": "Synced", "status": "True", "reason": "ReconcileSuccess",
             "lastTransitionTime": "2026-01-12T09:15:40Z"},
        ]
    }  # fmt: skip
    return {**doc, "metadata": meta, "status": status}


def _dump(docs: list[dict[str, Any]], **options: Any) -> str:
    return yaml.dump_all(docs, **{"Dumper": _Dumper, **options})


def _commented(docs: list[dict[str, Any]], dumper: type[yaml.SafeDumper]) -> str:
    return "".join(
        f"---\n# {doc['kind']} {doc['metadata']['name']}\n"
        + yaml.dump(doc, Dumper=dumper, width=120)
        for doc in docs
    )


def write_style(root: Path, style: str, files: dict[str, list[dict[str, Any]]]) -> int:
    """The fleet written in ``style`` under ``root``; its size in bytes."""
    writers: dict[str, Callable[[list[dict[str, Any]]], str]] = {
        "plain": _dump,
        "double-quoted": lambda docs: _commented(docs, _quoting_dumper('"')),
        "single-quoted": lambda docs: _dump(docs, Dumper=_quoting_dumper("'")),
        "flow": lambda docs: _dump(docs, default_flow_style=True, width=120),
        "json": lambda docs: json.dumps(docs, indent=2) + "\n",
        "kubectl": lambda docs: yaml.dump_all(
            [kubectl_doc(doc, i) for i, doc in enumerate(docs)], Dumper=_block_dumper()
        ),
    }
    suffix = ".json" if style == "json" else ".yaml"
    return sum(
        (root / f"{stem}{suffix}").write_text(writers[style](docs)) for stem, docs in files.items()
    )


STYLES = ("plain", "double-quoted", "single-quoted", "flow", "json", "kubectl")


def whole_process(verb: str, directory: str, source: str | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user and system, its forked child's included) of one
    `modelplane VERB DIR -o json` process, output discarded."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = source
    command = [sys.executable, "-m", "modelplane", verb, directory, "-o", "json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def fast_files(directory: str) -> str:
    """How many of the YAML files the fast reader reads, as ``n/m`` (``-`` for JSON)."""
    files = [f for f in manifests.expand(directory) if not f.endswith(".json")]
    fast = sum(fastyaml.read(Path(f).read_bytes()) is not None for f in files)
    return f"{fast}/{len(files)}" if files else "-"


def main(argv: list[str]) -> None:
    """Every style, both commands, at each desired count: one row each (with a before column
    where asked)."""
    before = os.environ.get("MODELPLANE_BEFORE")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    for desired in [int(a) for a in argv] or DESIRED:
        print(f"fleet: {CLUSTERS} clusters x 4 pools, {EXISTING} existing, {desired} desired")
        print(
            f"{'style':>13} {'MB':>5} {'fast':>5} {'verb':>8} "
            + (f"{'before ms':>10} {'cpu ms':>7} " if before else "")
            + f"{'process ms':>11} {'cpu ms':>7} {'load ms':>8} {'validate ms':>12} "
            f"{'compute ms':>11} {'write ms':>9} {'loadavg':>7}"
        )
        files = fleet(desired)
        for style in STYLES:
            with tempfile.TemporaryDirectory() as tmp:
                size = write_style(Path(tmp), style, files) / 1e6
                fast = fast_files(tmp)
                for verb in ("schedule", "render"):
                    now: list[tuple[float, float]] = []
                    then: list[tuple[float, float]] = []
                    for _ in range(RUNS):  # alternated: both see the same load
                        if before:
                            then.append(whole_process(verb, tmp, before))
                        now.append(whole_process(verb, tmp, None))
                    split = in_process_split(tmp, verb)
                    compute = split.get("schedule", 0.0) + split.get("compose", 0.0)
                    then_cell = (
                        f"{_median_ms(then, 0):10.0f} {_median_ms(then, 1):7.0f} " if before else ""
                    )
                    print(
                        f"{style:>13} {size:5.1f} {fast:>5} {verb:>8} {then_cell}"
                        f"{_median_ms(now, 0):11.0f} {_median_ms(now, 1):7.0f} "
                        f"{split['load'] * 1000:8.0f} {split['validate'] * 1000:12.0f} "
                        f"{compute * 1000:11.0f} {split['write'] * 1000:9.0f} "
                        f"{os.getloadavg()[0]:7.2f}"
                    )
                    sys.stdout.flush()
    print(
        "process ms: median wall time of the whole command; cpu ms: its median user + system "
        "time (its forked reader's included); load, validate, compute (schedule, or render's "
        "compose) and write: one cold in-process run's split (bench_cli's steps; a large file's "
        "documents are validated while it is read, in load); loadavg: the "
        "machine's 1-minute load after the runs (2 CPUs: above about 1, other work shared them)"
    )
    print("targets: every style's schedule and render <= 2000 ms at 10 desired, <= 2500 ms at 100")


def _median_ms(runs: list[tuple[float, float]], column: int) -> float:
    return statistics.median(run[column] for run in runs) * 1000


if __name__ == "__main__":
    main(sys.argv[1:])
