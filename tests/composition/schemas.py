"""Validate composed objects against their real schemas.

CRD kinds: the served version's openAPIV3Schema from ``../shared/schemas`` with
jsonschema, made strict (an object that lists properties and does not preserve
unknown fields refuses others, as the API server prunes or rejects them).
Core kinds: kubernetes-validate, strict, for every Kubernetes version from 1.34 on
that it ships. GKE's GCPBackendPolicy and Istio's DestinationRule, whose CRDs are not in
``../shared/schemas``: a strict schema of the documented fields we set (POLICY_SHAPES).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import celpy
import jsonschema
import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import all_versions, major_minor
from packaging.version import Version

from tests.paths import REPO, SCHEMAS
from tools.crdcost.estimate import CEL_RESERVED

REPO_ROOT = REPO

MIN_KUBERNETES = "1.34"

# The C loader parses the 1.3 MB LeaderWorkerSet CRD ten times faster when available.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# CRD file per (apiVersion group, kind) of the objects we compose.
CRD_FILES = {
    (
        "leaderworkerset.x-k8s.io",
        "LeaderWorkerSet",
    ): "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
    ("grove.io", "PodCliqueSet"): "grove.io_podcliquesets.yaml",
    (
        "inference.networking.k8s.io",
        "InferencePool",
    ): "inference.networking.k8s.io_inferencepools.yaml",
    ("gateway.networking.k8s.io", "HTTPRoute"): "gateway.networking.k8s.io_httproutes.yaml",
    ("kubernetes.m.crossplane.io", "Object"): "kubernetes.m.crossplane.io_objects.yaml",
    ("networking.gke.io", "HealthCheckPolicy"): "networking.gke.io_healthcheckpolicies.yaml",
    # The serving stack (docs/stack.md): provider-helm, Crossplane's Usage, what we create.
    ("helm.m.crossplane.io", "Release"): "helm.m.crossplane.io_releases.yaml",
    (
        "helm.m.crossplane.io",
        "ClusterProviderConfig",
    ): "helm.m.crossplane.io_clusterproviderconfigs.yaml",
    (
        "kubernetes.m.crossplane.io",
        "ClusterProviderConfig",
    ): "kubernetes.m.crossplane.io_clusterproviderconfigs.yaml",
    ("protection.crossplane.io", "Usage"): "protection.crossplane.io_usages.yaml",
    ("scheduling.run.ai", "Queue"): "scheduling.run.ai_queues.yaml",
    ("gateway.networking.k8s.io", "Gateway"): "gateway.networking.k8s.io_gateways.yaml",
    ("gateway.networking.k8s.io", "GatewayClass"): "gateway.networking.k8s.io_gatewayclasses.yaml",
    # The front door: Envoy Gateway v1.8.3 and Envoy AI Gateway v1.1.0 (../shared/schemas/SOURCES-frontdoor.md).
    ("gateway.envoyproxy.io", "Backend"): "gateway.envoyproxy.io_backends.yaml",
    ("gateway.envoyproxy.io", "EnvoyProxy"): "gateway.envoyproxy.io_envoyproxies.yaml",
    ("gateway.envoyproxy.io", "SecurityPolicy"): "gateway.envoyproxy.io_securitypolicies.yaml",
    (
        "gateway.envoyproxy.io",
        "BackendTrafficPolicy",
    ): "gateway.envoyproxy.io_backendtrafficpolicies.yaml",
    ("aigateway.envoyproxy.io", "AIGatewayRoute"): "aigateway.envoyproxy.io_aigatewayroutes.yaml",
    (
        "aigateway.envoyproxy.io",
        "AIServiceBackend",
    ): "aigateway.envoyproxy.io_aiservicebackends.yaml",
    (
        "aigateway.envoyproxy.io",
        "BackendSecurityPolicy",
    ): "aigateway.envoyproxy.io_backendsecuritypolicies.yaml",
    # The autoscaling recipe (KEDA v2.20.2).
    ("keda.sh", "ScaledObject"): "keda.sh_scaledobjects.yaml",
    ("keda.sh", "TriggerAuthentication"): "keda.sh_triggerauthentications.yaml",
    # A GKE cluster we provision (provider-upjet-gcp v3.0.0, docs/provisioning.md).
    **{
        (f"{service}.gcp.m.upbound.io", kind): f"{service}.gcp.m.upbound.io_{plural}.yaml"
        for service, kind, plural in (
            ("compute", "Network", "networks"),
            ("compute", "Subnetwork", "subnetworks"),
            ("compute", "Router", "routers"),
            ("compute", "RouterNAT", "routernats"),
            ("container", "Cluster", "clusters"),
            ("container", "NodePool", "nodepools"),
            ("cloudplatform", "ServiceAccount", "serviceaccounts"),
            ("cloudplatform", "ServiceAccountKey", "serviceaccountkeys"),
            ("cloudplatform", "ProjectIAMMember", "projectiammembers"),
            ("cloudplatform", "ProjectService", "projectservices"),
        )
    },
}

# The documented fields of the two policy kinds whose CRDs are not in ../shared/schemas:
# only the fields we set, strict. GCPBackendPolicy: GKE Gateway API reference
# (networking.gke.io/v1, spec.targetRef, spec.default.timeoutSec); DestinationRule: Istio
# networking/v1 reference (spec.host, spec.trafficPolicy.tls.mode, insecureSkipVerify).
POLICY_SHAPES: dict[tuple[str, str], dict[str, Any]] = {
    ("networking.gke.io", "GCPBackendPolicy"): {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "networking.gke.io/v1"},
            "kind": {"const": "GCPBackendPolicy"},
            "metadata": {"type": "object", "required": ["name", "namespace"]},
            "spec": {
                "type": "object",
                "additionalProperties": False,
                "required": ["targetRef", "default"],
                "properties": {
                    "targetRef": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["group", "kind", "name"],
                        "properties": {
                            "group": {"type": "string"},
                            "kind": {"type": "string"},
                            "name": {"type": "string"},
                        },
                    },
                    "default": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "timeoutSec": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": 2_147_483_647,
                            }
                        },
                    },
                },
            },
        },
    },
    ("networking.istio.io", "DestinationRule"): {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "networking.istio.io/v1"},
            "kind": {"const": "DestinationRule"},
            "metadata": {"type": "object", "required": ["name", "namespace"]},
            "spec": {
                "type": "object",
                "additionalProperties": False,
                "required": ["host"],
                "properties": {
                    "host": {"type": "string"},
                    "trafficPolicy": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "tls": {
                                "type": "object",
                                "additionalProperties": False,
                                "properties": {
                                    "mode": {
                                        "enum": ["DISABLE", "SIMPLE", "MUTUAL", "ISTIO_MUTUAL"]
                                    },
                                    "insecureSkipVerify": {"type": "boolean"},
                                },
                            }
                        },
                    },
                },
            },
        },
    },
}

CORE_KINDS = {
    "Deployment",
    "ResourceClaimTemplate",
    "Service",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ConfigMap",
    # ModelCache staging
    "PersistentVolumeClaim",
    "Secret",
    "Job",
    # The routable backend of a ModelEndpoint
    "EndpointSlice",
    # The serving stack's own objects (the CRD installer, the gateway's namespace)
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    # The pickers' disruption budget
    "PodDisruptionBudget",
    # The ReadWriteMany class of a cluster we provision
    "StorageClass",
}

_EMBEDDED_FIELDS = {
    "apiVersion": {"type": "string"},
    "kind": {"type": "string"},
    "metadata": {"type": "object"},
}


def require_shared() -> None:
    """Skip the calling test when the shared schemas are not checked out beside the repo."""
    if not SCHEMAS.is_dir():
        pytest.skip(f"upstream CRD schemas not found at {SCHEMAS} (expected repo_root/../shared)")


def strict(schema: Any) -> Any:
    """A copy of an OpenAPI v3 structural schema in which unknown properties are errors."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    preserve = out.get("x-kubernetes-preserve-unknown-fields") is True
    if "properties" in out and not preserve and "additionalProperties" not in out:
        if out.get("x-kubernetes-embedded-resource"):
            out["properties"] = {**_EMBEDDED_FIELDS, **out["properties"]}
        out["additionalProperties"] = False
    return out


def with_defaults(schema: dict[str, Any], value: Any) -> Any:
    """``value`` with the schema's defaults applied, as the API server does before validating."""
    if isinstance(value, dict):
        out = dict(value)
        for name, prop in schema.get("properties", {}).items():
            if name not in out and "default" in prop:
                out[name] = copy.deepcopy(prop["default"])
            if name in out:
                out[name] = with_defaults(prop, out[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            out = {
                k: v if k in schema.get("properties", {}) else with_defaults(extra, v)
                for k, v in out.items()
            }
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [with_defaults(schema["items"], v) for v in value]
    return value


def _cel_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {(f"__{k}__" if k in CEL_RESERVED else k): _cel_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cel_value(v) for v in value]
    return value


@functools.cache
def _cel_program(rule: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(rule))


def cel_rule_errors(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """The CRD's ``x-kubernetes-validations`` that fail on ``value`` (transition rules skipped)."""
    errors: list[str] = []
    for rule in schema.get("x-kubernetes-validations", []):
        if "oldSelf" in rule["rule"]:
            continue
        try:
            ok = _cel_program(rule["rule"]).evaluate({"self": celpy.json_to_cel(_cel_value(value))})
        except celpy.CELEvalError as error:
            ok = error
        if ok is not True and not (isinstance(ok, celpy.celtypes.BoolType) and bool(ok)):
            errors.append(f"{path or '(root)'}: {rule.get('message', rule['rule'])} ({ok})")
    if isinstance(value, dict):
        for name, prop in schema.get("properties", {}).items():
            if name in value:
                errors += cel_rule_errors(prop, value[name], f"{path}.{name}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errors += cel_rule_errors(schema["items"], item, f"{path}[{i}]")
    return errors


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _version(api_version: str) -> str:
    return api_version.rpartition("/")[2]


@functools.cache
def crd_validator(group: str, kind: str, version: str) -> jsonschema.Draft7Validator:
    """A strict validator for one served version of an upstream CRD."""
    path = SCHEMAS / CRD_FILES[(group, kind)]
    crd = yaml.load(path.read_text(), Loader=_LOADER)
    served = {v["name"]: v for v in crd["spec"]["versions"] if v.get("served")}
    if version not in served:
        raise AssertionError(
            f"{kind} {group}/{version} is not served by {path.name}: {sorted(served)}"
        )
    schema = strict(copy.deepcopy(served[version]["schema"]["openAPIV3Schema"]))
    return jsonschema.Draft7Validator(schema)


def crd_version(group: str, kind: str) -> str:
    """The CRD's storage version (the one our objects use), for reports."""
    crd = yaml.load((SCHEMAS / CRD_FILES[(group, kind)]).read_text(), Loader=_LOADER)
    return str(next(v["name"] for v in crd["spec"]["versions"] if v.get("storage")))


@functools.cache
def kubernetes_versions() -> tuple[str, ...]:
    """Every Kubernetes minor version kubernetes-validate ships, from 1.34 on."""
    shipped = {major_minor(v) for v in all_versions()}
    return tuple(sorted((v for v in shipped if Version(v) >= Version(MIN_KUBERNETES)), key=Version))


def validate_manifest(obj: dict[str, Any]) -> None:
    """Validate one remote object or provider Object; raise on the first error."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    if kind in CORE_KINDS and (
        _group(api_version)
        in {
            "",
            "apps",
            "batch",
            "discovery.k8s.io",
            "policy",
            "resource.k8s.io",
            "rbac.authorization.k8s.io",
            "storage.k8s.io",
        }
    ):
        for version in kubernetes_versions():
            kubernetes_validate.validate(obj, version, strict=True)
        return
    key = (_group(api_version), kind)
    if key in POLICY_SHAPES:
        jsonschema.Draft7Validator(POLICY_SHAPES[key]).validate(obj)
        return
    require_shared()
    if key not in CRD_FILES:
        raise AssertionError(f"no schema known for {api_version} {kind}")
    validator = crd_validator(*key, _version(api_version))
    defaulted = with_defaults(validator.schema, obj)
    errors = sorted(validator.iter_errors(defaulted), key=lambda e: list(e.path))
    details = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors[:10]]
    if not details:
        details = cel_rule_errors(validator.schema, defaulted)
    if details:
        joined = "\n".join(details)
        raise AssertionError(f"{kind} {obj.get('metadata', {}).get('name')} is invalid:\n{joined}")


def validate_delivered(obj: dict[str, Any]) -> None:
    """Validate a provider Object and the manifest it carries.

    An observe-only Object's manifest names the object to read (apiVersion, kind, name),
    nothing more: only the Object is validated.
    """
    validate_manifest(obj)
    if obj["spec"].get("managementPolicies") != ["Observe"]:
        validate_manifest(obj["spec"]["forProvider"]["manifest"])
