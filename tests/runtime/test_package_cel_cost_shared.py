"""The checked-in package installs: the shared CRD CEL cost checker accepts every rule.

``../shared/tools/crd-cel-cost`` turns each XRD into the CRD Crossplane would create and
estimates every rule the way the API server does (see its README). Run at half the
server's limits (``--margin 2``: 5,000,000 per rule, 50,000,000 per CRD) and at the
declared Kubernetes floor, so a new unbounded list, or a rule the floor's CEL environment
lacks, fails here. It is a cross-check beside the project's own estimate.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from modelplane.packaging import CROSSPLANE_FLOOR, KUBERNETES_FLOOR
from tests.paths import REPO, SHARED

TOOL = SHARED / "tools" / "crd-cel-cost" / "crd_cel_cost.py"
APIS = REPO / "package" / "configuration" / "apis"
needs_tool = pytest.mark.skipif(
    not TOOL.is_file(), reason=f"the shared CEL cost checker is absent at {TOOL}"
)


def _check(tmp_path: Path, k8s: str, crossplane: str) -> tuple[int, dict[str, object]]:
    report = tmp_path / f"report-{k8s}-{crossplane}.json"
    result = subprocess.run(
        [
            sys.executable,
            str(TOOL),
            "--crossplane",
            "--crossplane-version",
            crossplane,
            "--k8s-version",
            k8s,
            "--margin",
            "2",
            "--json",
            str(report),
            str(APIS),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.returncode, json.loads(report.read_text(encoding="utf-8"))


@needs_tool
def test_every_crd_is_within_half_the_limits_at_the_floors(tmp_path: Path) -> None:
    code, report = _check(tmp_path, KUBERNETES_FLOOR, CROSSPLANE_FLOOR)
    crds = report["crds"]
    assert isinstance(crds, list)
    kinds = {c["kind"] for c in crds}
    assert kinds == {
        "ModelDeployment",
        "ModelReplica",
        "InferenceClass",
        "InferenceCluster",
        "ModelCache",
        "ModelEndpoint",
        "ModelService",
        "InferenceGateway",
        "TelemetryDestination",
        "MetricMapping",
    }
    failing = [
        (c["kind"], r["path"], r["index"], r["cost"], r["errors"])
        for c in crds
        for v in c["versions"]
        for r in v["rules"]
        if r["verdict"] != "ok"
    ]
    assert not failing
    assert all(v["total_ok"] for c in crds for v in c["versions"])
    assert code == 0


@needs_tool
def test_one_minor_below_the_kubernetes_floor_the_semver_rules_fail(tmp_path: Path) -> None:
    """The floor is not lower than it must be: at 1.33 ICL-09's isSemver is undeclared."""
    major, minor = KUBERNETES_FLOOR.split(".")
    code, report = _check(tmp_path, f"{major}.{int(minor) - 1}", CROSSPLANE_FLOOR)
    crds = report["crds"]
    assert isinstance(crds, list)
    failing = {r["rule"] for c in crds for v in c["versions"] for r in v["rules"] if r["errors"]}
    assert failing == {"!has(self.version) || isSemver(self.version)"}
    assert code == 1
