"""Every object `render examples/` prints is valid against its schema."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api.validation import validate_document
from modelplane.cli.main import main
from tests.composition.schemas import require_shared, validate_delivered, validate_manifest
from tests.paths import EXAMPLES

WORKLOAD_KINDS = {"Deployment", "LeaderWorkerSet", "PodCliqueSet"}


def test_every_rendered_object_is_valid(capsys: pytest.CaptureFixture[str]) -> None:
    require_shared()
    assert main(["render", str(EXAMPLES)]) == 0
    objects = list(yaml.safe_load_all(capsys.readouterr().out))
    assert objects
    remote = usages = 0
    for obj in objects:
        if obj["kind"] == "Object":
            validate_delivered(obj)
            remote += 1
        elif not obj["apiVersion"].startswith("modelplane.ai/"):
            # A replica's or cache's Usage, a cluster's provider configs, stack Releases and
            # Usages; the control plane's Services, Gateways and routes.
            validate_manifest(obj)  # the released CRD, its CEL rules included
            usages += obj["kind"] == "Usage"
        else:
            problems = validate_document(obj).problems
            assert problems == [], (obj["kind"], obj["metadata"]["name"], problems)
    assert remote > 0 and usages > 0


FRONT_DOOR = {
    "Backend",
    "AIServiceBackend",
    "BackendSecurityPolicy",
    "Secret",
    "Namespace",
    "Gateway",
    "AIGatewayRoute",
    "BackendTrafficPolicy",
}


def test_the_demo_front_door_is_valid_against_the_released_crds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """demo/: the Objects delivering the Gateway to the front door cluster and, beside the
    route there, the hosted endpoint's Backend (TLS), AIServiceBackend, keyed
    BackendSecurityPolicy and the copy of its Secret, the AIGatewayRoute and its
    BackendTrafficPolicy, each Object and each manifest against provider-kubernetes v1.2.1,
    Envoy Gateway v1.8.3, Envoy AI Gateway v1.1.0, Gateway API v1.5.1 and Kubernetes."""
    require_shared()
    assert main(["render", str(EXAMPLES), str(EXAMPLES.parent / "demo")]) == 0
    objects = list(yaml.safe_load_all(capsys.readouterr().out))
    front = [
        o
        for o in objects
        if o["kind"] == "Object"
        and o["metadata"]["name"].startswith(("default-", "qwen3-8b-"))
        and o["metadata"]["namespace"] in ("modelplane-system", "ml-team")
        and o["spec"]["forProvider"]["manifest"]["kind"] in FRONT_DOOR
    ]
    kinds = {o["spec"]["forProvider"]["manifest"]["kind"] for o in front}
    assert kinds == FRONT_DOOR
    for obj in front:
        validate_delivered(obj)


def _manifests(path: Path) -> list[dict[str, Any]]:
    return [
        o["spec"]["forProvider"]["manifest"]
        for o in yaml.safe_load_all(path.read_text())
        if o and o["kind"] == "Object"
    ]


def _deployment_of(workload: dict[str, Any]) -> str:
    """The deployment a workload's pods are labelled with ("" for the picker's, a stack's
    and a cache's: they carry none or another shape)."""
    found = re.search(r'"modelplane.ai/deployment": "([^"]+)"', json.dumps(workload))
    return found.group(1) if found else ""


def test_examples_team_workloads_run_in_ml_team_on_each_cluster(tmp_path: Path) -> None:
    # qwen3-8b and qwen3-32b-pd (namespace ml-team, no ModelCache) compose into ml-team on
    # every cluster they are placed on, beside the Namespace and the pickers' shared objects
    # that cluster composes there; llama-405b names a ModelCache and stays in `default`
    # (docs/composition.md, "Team namespaces").
    require_shared()
    assert main(["render", str(EXAMPLES), "--out", str(tmp_path)]) == 0
    seen: dict[str, set[str]] = {}
    for path in sorted(tmp_path.glob("cluster-*.yaml")):
        manifests = _manifests(path)
        workloads = {
            (_deployment_of(m), m["metadata"]["namespace"])
            for m in manifests
            if m["kind"] in WORKLOAD_KINDS and _deployment_of(m)
        }
        for deployment, namespace in workloads:
            seen.setdefault(deployment, set()).add(namespace)
        teams = {ns for d, ns in workloads if ns != "default"}
        namespaces = {m["metadata"]["name"] for m in manifests if m["kind"] == "Namespace"}
        accounts = {
            m["metadata"]["namespace"]
            for m in manifests
            if m["kind"] == "ServiceAccount" and m["metadata"]["name"] == "modelplane-epp"
        }
        assert teams <= namespaces, path.name
        assert accounts == {"default", *teams}, path.name
    assert seen == {"qwen3-8b": {"ml-team"}, "qwen3-32b-pd": {"ml-team"}, "llama-405b": {"default"}}


def test_the_team_namespace_object_is_valid_and_never_deletes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # provider-kubernetes's Object schema (kubernetes.m.crossplane.io_objects.yaml) with its
    # CEL rules; Delete is left out of its management policies (composition/namespaces.py).
    require_shared()
    assert main(["render", str(EXAMPLES)]) == 0
    objects = [
        o
        for o in yaml.safe_load_all(capsys.readouterr().out)
        if o["kind"] == "Object"
        and o["spec"]["forProvider"]["manifest"]["kind"] == "Namespace"
        and o["spec"]["forProvider"]["manifest"]["metadata"]["name"] == "ml-team"
    ]
    assert len(objects) == 2  # the two clusters the ml-team replicas are placed on
    for obj in objects:
        validate_delivered(obj)
        assert obj["spec"]["managementPolicies"] == [
            "Observe",
            "Create",
            "Update",
            "LateInitialize",
        ]
        labels = obj["spec"]["forProvider"]["manifest"]["metadata"]["labels"]
        assert labels == {
            "modelplane.ai/team-namespace": "ml-team",
            "app.kubernetes.io/managed-by": "modelplane",
        }
