"""The configuration package (docs/crossplane.md, "What gets installed"): checked in without drift,
valid Crossplane objects.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from modelplane import __version__
from modelplane.api import KINDS
from modelplane.api.crds import render_xrds, xrds
from modelplane.cli.main import main
from modelplane.packaging import package_files
from modelplane.reconcile.cluster import gateway_object
from tests.paths import REPO, SCHEMAS

from .helpers import existing_cluster

CHECKED_IN = REPO / "package"
needs_schemas = pytest.mark.skipif(
    not SCHEMAS.is_dir(), reason=f"upstream CRD schemas not found at {SCHEMAS} (../shared/schemas)"
)


def _strict(node: Any) -> Any:
    """A CRD schema made strict: listed properties only, as the API server prunes the rest."""
    if isinstance(node, list):
        return [_strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strict(v) for k, v in node.items()}
    if "properties" in out and not out.get("x-kubernetes-preserve-unknown-fields"):
        out.setdefault("additionalProperties", False)
    return out


def _schema(file: str, version: str) -> dict[str, Any]:
    crd = yaml.safe_load((SCHEMAS / file).read_text())
    served = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    schema = _strict(served["schema"]["openAPIV3Schema"])
    # metadata is ObjectMeta, described by the API server, not the CRD.
    schema["properties"]["metadata"] = {"type": "object"}
    return schema  # type: ignore[no-any-return]


def _load(relative: str) -> dict[str, Any]:
    return yaml.safe_load(package_files()[relative])  # type: ignore[no-any-return]


def test_package_files_are_exactly_the_specified_set() -> None:
    expected = {
        "configuration/crossplane.yaml",
        "function/crossplane.yaml",
        "install/function.yaml",
        "install/provider-kubernetes.yaml",
        "install/activation-policy.yaml",
    }
    for info in KINDS:
        expected |= {
            f"configuration/apis/{info.plural}/definition.yaml",
            f"configuration/apis/{info.plural}/composition.yaml",
        }
    assert set(package_files()) == expected


def test_package_verb_writes_the_files(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    assert main(["package", "--out", str(out)]) == 0
    written = {
        str(p.relative_to(out)): p.read_text(encoding="utf-8")
        for p in out.rglob("*")
        if p.is_file()
    }
    assert written == package_files()


def test_package_defaults_to_the_package_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["package"]) == 0
    assert (tmp_path / "package" / "configuration" / "crossplane.yaml").is_file()


def test_unwritable_output_is_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["package", "--out", str(blocker)]) == 1


def test_checked_in_package_has_not_drifted() -> None:
    for relative, text in package_files().items():
        path = CHECKED_IN / relative
        assert path.is_file(), f"{relative} missing: run `make package`"
        assert path.read_text(encoding="utf-8") == text, f"{relative} drifted: run `make package`"
    for sub in ("configuration", "function", "install"):
        extra = {
            str(p.relative_to(CHECKED_IN)) for p in (CHECKED_IN / sub).rglob("*") if p.is_file()
        }
        assert extra <= set(package_files()), (
            f"stale files under package/{sub}: {extra - set(package_files())}"
        )


def test_definitions_are_what_crds_writes() -> None:
    for definition in xrds():
        plural = definition["spec"]["names"]["plural"]
        assert package_files()[f"configuration/apis/{plural}/definition.yaml"] == render_xrds(
            [definition]
        )


def test_configuration_metadata() -> None:
    config = _load("configuration/crossplane.yaml")
    assert config["apiVersion"] == "meta.pkg.crossplane.io/v1" and config["kind"] == "Configuration"
    assert config["metadata"]["name"] == "modelplane"
    assert config["spec"]["crossplane"] == {"version": ">=v2.3.0"}
    assert config["spec"]["dependsOn"] == [
        {
            "provider": "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes",
            "version": ">=v1.0.0",
        },
        {
            "provider": "xpkg.crossplane.io/crossplane-contrib/provider-helm",
            "version": ">=v1.4.0",
        },
        # A GKE cluster's managed resources (docs/provisioning.md): provider-upjet-gcp v3.0.0's
        # service packages, as .github/workflows/publish-provider-packages.yaml publishes them.
        *(
            {
                "provider": f"xpkg.crossplane.io/crossplane-contrib/provider-gcp-{service}",
                "version": ">=v3.0.0",
            }
            for service in ("compute", "container", "cloudplatform")
        ),
        # An EKS cluster's: provider-upjet-aws v2.6.0's, one package per service it composes.
        *(
            {
                "provider": f"xpkg.crossplane.io/crossplane-contrib/provider-aws-{service}",
                "version": ">=v2.6.0",
            }
            for service in ("ec2", "eks", "iam", "efs")
        ),
        {
            "function": "xpkg.crossplane.io/modelplane/function-modelplane",
            "version": f">=v{__version__}",
        },
    ]


def test_function_metadata_and_install() -> None:
    meta = _load("function/crossplane.yaml")
    assert (meta["apiVersion"], meta["kind"], meta["metadata"]["name"]) == (
        "meta.pkg.crossplane.io/v1beta1",
        "Function",
        "function-modelplane",
    )
    assert meta["spec"]["crossplane"] == {"version": ">=v2.3.0"}
    install = _load("install/function.yaml")
    assert install == {
        "apiVersion": "pkg.crossplane.io/v1",
        "kind": "Function",
        "metadata": {"name": "modelplane-function-modelplane"},
        "spec": {"package": f"xpkg.crossplane.io/modelplane/function-modelplane:v{__version__}"},
    }


def _static(key: str, kind: str, **selector: str) -> dict[str, str]:
    return {
        "requirementName": key,
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": kind,
        **selector,
    }


def _fetched(*selectors: dict[str, str]) -> dict[str, Any]:
    """A step whose requirements Crossplane fetches before the first call, named in its input."""
    return {
        "input": {
            "apiVersion": "modelplane.ai/v1alpha1",
            "kind": "StepInput",
            "fetchedRequirements": [s["requirementName"] for s in selectors],
        },
        "requirements": {"requiredResources": list(selectors)},
    }


STATIC_STEPS: dict[str, dict[str, Any]] = {
    "ModelDeployment": _fetched(
        _static("clusters", "InferenceCluster"), _static("classes", "InferenceClass")
    ),
    "ModelCache": _fetched(_static("clusters", "InferenceCluster")),
    # Every gateway (which serve it), every cluster (where they run), and provider-kubernetes
    # with its runtime config (may a hosted provider's key be copied).
    "ModelService": _fetched(
        _static("inference-gateways", "InferenceGateway"),
        _static("clusters", "InferenceCluster"),
        {
            **_static(
                "provider-kubernetes", "Provider", name="crossplane-contrib-provider-kubernetes"
            ),
            "apiVersion": "pkg.crossplane.io/v1",
        },
        {
            **_static(
                "provider-kubernetes-runtime-config",
                "DeploymentRuntimeConfig",
                name="modelplane-provider-kubernetes",
            ),
            "apiVersion": "pkg.crossplane.io/v1beta1",
        },
    ),
}


@pytest.mark.parametrize("info", KINDS, ids=lambda k: k.kind)
def test_composition_shape(info: Any) -> None:
    composition = _load(f"configuration/apis/{info.plural}/composition.yaml")
    assert composition == {
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": f"{info.plural}.modelplane.ai"},
        "spec": {
            "compositeTypeRef": {"apiVersion": "modelplane.ai/v1alpha1", "kind": info.kind},
            "mode": "Pipeline",
            "pipeline": [
                {
                    "step": "compose",
                    "functionRef": {"name": "modelplane-function-modelplane"},
                    **STATIC_STEPS.get(info.kind, {}),
                }
            ],
        },
    }
    definition = _load(f"configuration/apis/{info.plural}/definition.yaml")
    assert definition["spec"]["defaultCompositionRef"] == {"name": composition["metadata"]["name"]}


@needs_schemas
@pytest.mark.parametrize("info", KINDS, ids=lambda k: k.kind)
def test_package_objects_are_valid_against_crossplane_schemas(info: Any) -> None:
    jsonschema.validate(
        _load(f"configuration/apis/{info.plural}/composition.yaml"),
        _schema("apiextensions.crossplane.io_compositions.yaml", "v1"),
    )
    jsonschema.validate(
        _load(f"configuration/apis/{info.plural}/definition.yaml"),
        _schema("apiextensions.crossplane.io_compositeresourcedefinitions.yaml", "v2"),
    )


@needs_schemas
def test_function_object_is_valid() -> None:
    jsonschema.validate(
        _load("install/function.yaml"), _schema("pkg.crossplane.io_functions.yaml", "v1")
    )


@needs_schemas
def test_gateway_object_of_the_cluster_function_is_valid() -> None:
    from modelplane.api import InferenceCluster

    obj = gateway_object(InferenceCluster.model_validate(existing_cluster()))
    jsonschema.validate(
        copy.deepcopy(obj), _schema("kubernetes.m.crossplane.io_objects.yaml", "v1alpha1")
    )


def test_dockerfile_runs_the_function() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert dockerfile.startswith("# syntax=") or "FROM python:3.11-slim" in dockerfile
    assert "FROM python:3.11-slim" in dockerfile
    assert "EXPOSE 9443" in dockerfile
    assert '"function", "serve"' in dockerfile


def test_the_front_door_composes_only_objects_crossplane_may_write() -> None:
    """The gateway and service functions compose provider-kubernetes Objects only (the endpoint
    function nothing), and read InferenceClusters, InferenceGateways, Providers,
    DeploymentRuntimeConfigs and Secrets: Crossplane's own ClusterRole covers them
    (crossplane/crossplane cluster/charts/crossplane/templates/clusterrole.yaml @ v2.3.4:
    secrets, pkg.crossplane.io), its RBAC manager the providers' kinds, so the package ships
    no ClusterRole of its own."""
    from modelplane.api import InferenceCluster, InferenceGateway, ModelEndpoint, ModelService
    from modelplane.reconcile.endpoint import reconcile_endpoint
    from modelplane.reconcile.gateway import reconcile_gateway
    from modelplane.reconcile.service import reconcile_service
    from tests.builders import front_door_cluster, inference_gateway

    endpoint = ModelEndpoint.model_validate(
        {
            "metadata": {"name": "e", "namespace": "n", "labels": {"a": "b"}},
            "spec": {
                "origin": "https://api.example.com",
                "model": "m",
                "credential": {"apiKey": {"secretRef": {"name": "k"}}},
            },
            "status": {"routing": {"backendName": "e-backend"}},
        }
    )
    gateway = InferenceGateway.model_validate(
        inference_gateway(
            address="1.2.3.4",
            tls={"certificateRefs": [{"name": "c"}]},
            auth={"method": "APIKey", "apiKey": {"secretSelector": {"matchLabels": {"k": "v"}}}},
        )
    )
    cluster = InferenceCluster.model_validate(front_door_cluster())
    service = ModelService.model_validate(
        {
            "metadata": {"name": "s", "namespace": "n"},
            "spec": {"endpoints": [{"selector": {"matchLabels": {"a": "b"}}}]},
        }
    )
    composed = [
        *reconcile_endpoint(endpoint).objects,
        *reconcile_gateway(gateway, cluster, [gateway], ["keys"], None, {}).objects,
        *reconcile_service(
            service, [endpoint], [gateway], {"frontdoor": cluster}, None, {}
        ).objects,
    ]
    assert composed
    assert {(o.object["apiVersion"], o.object["kind"]) for o in composed} == {
        ("kubernetes.m.crossplane.io/v1alpha1", "Object")
    }
    assert "install/rbac.yaml" not in package_files()


def test_provider_kubernetes_runs_with_sanitize_secrets() -> None:
    """install/provider-kubernetes.yaml: the runtime config the functions require before they
    copy a Secret (crossplane-contrib/provider-kubernetes cmd/provider/main.go @ v1.2.1:
    --sanitize-secrets, env SANITIZE_SECRETS, default false)."""
    from modelplane.composition.frontdoor import sanitize_problem

    config, provider = yaml.safe_load_all(package_files()["install/provider-kubernetes.yaml"])
    assert sanitize_problem(provider, config) is None
    assert (config["kind"], provider["kind"]) == ("DeploymentRuntimeConfig", "Provider")
