"""The example fleet, changes to it written as a user writes them, and render's placements."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.cli.inputs import fleet_of
from modelplane.cli.main import main
from modelplane.manifests import load
from modelplane.reconcile.deployment import Fleet
from tests.paths import EXAMPLES

CLUSTERS = EXAMPLES / "fleet" / "inferenceclusters.yaml"
QWEN = EXAMPLES / "deployments" / "qwen3-8b.yaml"


def example_fleet() -> Fleet:
    """The typed objects of examples/."""
    return fleet_of(load([str(EXAMPLES)]))


def example_cluster(name: str) -> dict[str, Any]:
    """One cluster of examples/fleet, as its file spells it."""
    docs = [d for d in yaml.safe_load_all(CLUSTERS.read_text()) if d]
    return copy.deepcopy(next(d for d in docs if d["metadata"]["name"] == name))


def drained(name: str) -> dict[str, Any]:
    """The example cluster with a NoExecute taint: a drain."""
    doc = example_cluster(name)
    taint = {"key": "modelplane.ai/drain", "effect": "NoExecute"}
    doc["spec"]["taints"] = [*doc["spec"].get("taints", []), taint]
    return doc


def scaled_qwen(replicas: int) -> dict[str, Any]:
    """examples' qwen3-8b deployment with another replica count."""
    doc: dict[str, Any] = yaml.safe_load(QWEN.read_text())
    doc["spec"]["replicas"] = replicas
    return doc


def write(path: Path, *docs: dict[str, Any]) -> str:
    """Documents as one YAML file; its path."""
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    return str(path)


def rendered_replicas(
    capsys: pytest.CaptureFixture[str], *paths: str
) -> dict[str, tuple[str, tuple[str, ...]]]:
    """``render``'s ModelReplicas of ``paths``: namespace/name -> (cluster, pools)."""
    code = main(["render", *paths])
    out, err = capsys.readouterr()
    assert code == 0, err
    placed: dict[str, tuple[str, tuple[str, ...]]] = {}
    for doc in yaml.safe_load_all(out):
        if doc and doc["kind"] == "ModelReplica":
            pools = tuple(
                sorted({m["nodePoolName"] for e in doc["spec"]["engines"] for m in e["members"]})
            )
            name = f"{doc['metadata']['namespace']}/{doc['metadata']['name']}"
            placed[name] = (doc["spec"]["clusterName"], pools)
    return placed


def changed_examples(directory: Path, *changes: dict[str, Any]) -> str:
    """examples/ with each change in place of its document (or added): a user's edited copy."""
    directory.mkdir(parents=True, exist_ok=True)
    keyed = {(c["kind"], c["metadata"]["name"]): c for c in changes}
    docs: list[dict[str, Any]] = []
    for file in sorted(EXAMPLES.rglob("*.yaml")):
        for doc in yaml.safe_load_all(file.read_text()):
            if doc:
                docs.append(keyed.pop((doc["kind"], doc["metadata"]["name"]), doc))
    docs.extend(keyed.values())
    return write(directory / "fleet.yaml", *docs)
