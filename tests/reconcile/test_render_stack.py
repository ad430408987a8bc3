"""`modelplane render` prints what every InferenceCluster composes for its serving stack.

Each cluster of the input, in name order, after the fleet: its provider configs, its stack
in install order (Releases, our own Objects, a Provided cluster's checks), the Usages, then
the Objects its replicas' pickers share (docs/cli.md, docs/stack.md). Every object is valid
against its released schema.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.cli.main import main
from modelplane.stack.components import COMPONENTS
from tests.composition.schemas import validate_delivered, validate_manifest
from tests.paths import EXAMPLES, shared_path

RESOURCE_KEY = "crossplane.io/composition-resource-name"
EXTERNAL_NAME = "crossplane.io/external-name"
STACK_KINDS = {"ClusterProviderConfig", "Release", "Usage", "Object"}
ENVOY = {"envoy-gateway", "envoy-ai-gateway-crds", "envoy-ai-gateway", "inference-gateway"}


def _render(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[list[Any], str]:
    assert main(["render", *map(str, paths)]) == 0
    out, err = capsys.readouterr()
    return list(yaml.safe_load_all(out)), err


def _cluster_objects(objects: list[dict[str, Any]], cluster: str) -> list[dict[str, Any]]:
    """What render printed for ``cluster`` after the fleet, before the caches."""
    end = next(i for i, o in enumerate(objects) if o["kind"] == "ModelCache")
    return [
        o
        for o in objects[:end]
        if o["kind"] in STACK_KINDS
        and o["metadata"]["name"].startswith(f"{cluster}-")
        and o["metadata"].get("namespace") in (None, "modelplane-system")
    ]


def _component(obj: dict[str, Any]) -> str | None:
    """The stack component a Release or one of our Objects installs, None for anything else."""
    annotations = obj["metadata"].get("annotations", {})
    if obj["kind"] == "Release":
        return str(annotations[EXTERNAL_NAME]).removeprefix("modelplane-")
    key = annotations.get(RESOURCE_KEY, "")
    return next((c.name for c in COMPONENTS if key.startswith(f"stack-{c.name}-")), None)


def _components(objects: list[dict[str, Any]]) -> list[str]:
    """The components in the order their first object is printed."""
    out: list[str] = []
    for obj in objects:
        name = _component(obj)
        if name is not None and name not in out:
            out.append(name)
    return out


def _validate(objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        if obj["kind"] == "Object":
            validate_delivered(obj)
        else:
            validate_manifest(obj)


def _observed_manifests(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (
            o["spec"]["forProvider"]["manifest"]["kind"],
            o["spec"]["forProvider"]["manifest"]["metadata"]["name"],
        )
        for o in objects
        if o["kind"] == "Object" and o["spec"].get("managementPolicies") == ["Observe"]
    ]


def test_every_cluster_gets_the_stack_it_needs_in_install_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    objects, err = _render(capsys, EXAMPLES)
    # ap-south-1 runs no replica and is printed all the same.
    standard = ["inference-extension-crds", "gke-gateway", "lws", "nvidia-dra-driver"]
    for gke in ("ap-south-1", "us-east-1"):
        printed = _cluster_objects(objects, gke)
        # GKE's own gateway serves its routes: no Envoy Gateway, no Dynamo parts, no other driver.
        # We provisioned the cluster, so we create its Gateway, of GKE's regional external class.
        assert _components(printed) == standard, gke
        assert _observed_manifests(printed) == []
        [gateway] = [
            o["spec"]["forProvider"]["manifest"]
            for o in printed
            if o["kind"] == "Object" and o["spec"]["forProvider"]["manifest"]["kind"] == "Gateway"
        ]
        assert gateway["metadata"] == {
            "name": "inference-gateway",
            "namespace": "modelplane-system",
        }
        assert gateway["spec"]["gatewayClassName"] == "gke-l7-regional-external-managed"
        assert f"{gke} (InferenceCluster): Managed stack Ready" in err
    dynamo = _cluster_objects(objects, "eu-west-1")
    assert _components(dynamo) == [
        "inference-extension-crds",
        "envoy-gateway",
        "envoy-ai-gateway-crds",
        "envoy-ai-gateway",
        "inference-gateway",
        "kai-scheduler",
        "kai-queues",
        "grove",
        "nvidia-dra-driver",
    ]
    assert set(_components(dynamo)) >= ENVOY and "lws" not in _components(dynamo)
    # Its own Gateway is composed, not observed.
    assert _observed_manifests(dynamo) == []
    queues = [
        o["spec"]["forProvider"]["manifest"]["metadata"]["name"]
        for o in dynamo
        if o["kind"] == "Object" and o["spec"]["forProvider"]["manifest"]["kind"] == "Queue"
    ]
    assert queues == ["modelplane-root", "modelplane"]


def test_each_cluster_prints_configs_stack_usages_then_shared_objects(
    capsys: pytest.CaptureFixture[str],
) -> None:
    objects, _ = _render(capsys, EXAMPLES)
    clusters = []
    for obj in objects:
        if obj["kind"] == "ClusterProviderConfig" and obj["apiVersion"].startswith("kubernetes"):
            clusters.append(obj["metadata"]["name"].rsplit("-cluster-kubeconfig-", 1)[0])
    assert clusters == ["ap-south-1", "eu-west-1", "us-east-1"]
    for cluster in clusters:
        printed = _cluster_objects(objects, cluster)
        sections = []
        for obj in printed:
            key = obj["metadata"].get("annotations", {}).get(RESOURCE_KEY, "")
            section = (
                "configs"
                if obj["kind"] == "ClusterProviderConfig"
                else "usages"
                if obj["kind"] == "Usage"
                else "shared"
                if key.startswith(("epp-", "team-namespace-"))
                else "stack"
            )
            if not sections or sections[-1] != section:
                sections.append(section)
        assert sections == ["configs", "stack", "usages", "shared"], cluster
        configs = [o for o in printed if o["kind"] == "ClusterProviderConfig"]
        assert [o["apiVersion"] for o in configs] == [
            "kubernetes.m.crossplane.io/v1alpha1",
            "helm.m.crossplane.io/v1beta1",
        ]
        # The helm config reads the same kubeconfig Secret as the kubernetes one.
        assert configs[0]["spec"] == configs[1]["spec"]


def test_every_stack_object_is_valid_against_its_released_schema(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shared_path("schemas", "helm.m.crossplane.io_releases.yaml")
    objects, _ = _render(capsys, EXAMPLES)
    for cluster in ("ap-south-1", "eu-west-1", "us-east-1"):
        printed = _cluster_objects(objects, cluster)
        assert {o["kind"] for o in printed} == STACK_KINDS
        _validate(printed)


def _provided(tmp_path: Path) -> Path:
    """The examples with eu-west-1 copied as lab-1, whose platform team brings the stack."""
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES, root)
    docs = list(yaml.safe_load_all((root / "fleet" / "inferenceclusters.yaml").read_text()))
    [template] = [d for d in docs if d["metadata"]["name"] == "eu-west-1"]
    lab = yaml.safe_load(yaml.safe_dump(template))
    lab["metadata"]["name"] = "lab-1"
    lab["spec"]["cluster"]["existing"]["secretRef"]["name"] = "lab-1-kubeconfig"
    lab["spec"]["cluster"]["existing"]["components"] = "Provided"
    del lab["status"]["providerConfigRef"]
    (root / "fleet" / "lab.yaml").write_text(yaml.safe_dump(lab))
    return root


def test_a_provided_cluster_prints_its_checks_and_installs_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    objects, err = _render(capsys, _provided(tmp_path))
    printed = _cluster_objects(objects, "lab-1")
    assert [o["kind"] for o in printed if o["kind"] in ("Release", "ClusterProviderConfig")] == [
        "ClusterProviderConfig"
    ]
    assert printed[0]["apiVersion"] == "kubernetes.m.crossplane.io/v1alpha1"
    assert _observed_manifests(printed) == [
        ("APIService", "v1.inference.networking.k8s.io"),
        ("APIService", "v1.gateway.networking.k8s.io"),
        ("APIService", "v2.scheduling.run.ai"),
        ("APIService", "v1alpha1.grove.io"),
        ("DeviceClass", "gpu.nvidia.com"),
        ("Gateway", "inference-gateway"),
    ]
    # The KAI queues its pods name are ours, created on a Provided cluster too.
    assert _components(printed) == ["kai-queues"]
    assert "lab-1 (InferenceCluster): Provided stack RequirementsMet" in err
    shared_path("schemas", "kubernetes.m.crossplane.io_objects.yaml")
    _validate(printed)
