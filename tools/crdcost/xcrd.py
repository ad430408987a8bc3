"""Crossplane's XRD -> CRD conversion, as far as it decides what the API server sees (pure).

Crossplane does not apply an XRD's schema as written: it rebuilds the CRD from a fixed
base and copies only some parts of the XRD's schema into it (crossplane
``internal/xcrd/crd.go`` ``genCrdVersion`` at v2.0.0-v2.2.x, crossplane-runtime
``pkg/xcrd/crd.go`` at v2.3.0, which crossplane v2.3.0 uses). What it keeps decides which
``x-kubernetes-validations`` the API server compiles and with what bounds, so the cost
check (``python -m tools.crdcost``, tests/crdcost/test_crd_cost.py) runs on this
conversion, not on the XRD text. Facts and sources: docs/crd-cost.md.

* root: rebuilt (``type: object``, ``required: [spec]``, ``apiVersion``/``kind`` strings);
  the XRD root keeps its description and, from Crossplane 2.2, its
  ``x-kubernetes-validations``;
* ``metadata``: replaced by ``{name: {type: string, maxLength: min(63, the XRD's)}}``;
* ``spec``: keeps required, validations, oneOf, description, preserve-unknown-fields and
  properties, and gains ``spec.crossplane`` (Namespaced and Cluster scopes) or the legacy
  top-level machinery fields (LegacyCluster);
* ``status``: keeps required, validations, description, oneOf and properties, and gains
  ``conditions`` (plus legacy fields);
* subresources: ``status`` always; ``scale`` only from Crossplane 2.3 (earlier
  ``apiextensions.crossplane.io/v2`` XRDs have no ``subresources`` field at all).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = [
    "CROSSPLANE_RELEASES",
    "FEATURE_SINCE",
    "crd_for_xrd",
    "crossplane_features",
    "minimum_crossplane",
]

# The releases whose conversion was read (docs/crd-cost.md).
CROSSPLANE_RELEASES = ("2.0", "2.1", "2.2", "2.3")
# The first Crossplane release that carries each XRD feature into the CRD; older ones
# drop it in silence.
FEATURE_SINCE: Mapping[str, str] = {
    # crossplane internal/xcrd/crd.go v2.2.0: OpenAPIV3Schema.XValidations = s.XValidations
    "root x-kubernetes-validations": "2.2",
    # crossplane apis/apiextensions/v2 xrd_types.go v2.3.0 (Subresources.Scale) and
    # crossplane-runtime pkg/xcrd/crd.go v2.3.0 (crdv.Subresources.Scale = ...)
    "scale subresource": "2.3",
}
# The composite's name is used as a label value (crd.go maxCompositeNameLength).
_MAX_NAME_LENGTH = 63

_STRING = {"type": "string"}


def _version(v: str) -> tuple[int, int]:
    major, _, minor = v.removeprefix("v").partition(".")
    return int(major), int(minor.partition(".")[0] or 0)


def _named(**props: Any) -> dict[str, Any]:
    return {"type": "object", "required": ["name"], "properties": props}


def _selector() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["matchLabels"],
        "properties": {
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}
        },
    }


def _refs(namespaced: bool) -> dict[str, Any]:
    props = {"apiVersion": _STRING, "name": _STRING, "kind": _STRING}
    if not namespaced:
        props["namespace"] = _STRING
    return {
        "type": "array",
        "x-kubernetes-list-type": "atomic",
        "items": {"type": "object", "required": ["apiVersion", "kind"], "properties": props},
    }


def _spec_props(scope: str, default_policy: str | None) -> dict[str, Any]:
    """``CompositeResourceSpecProps``: the machinery fields Crossplane adds to spec."""
    policy: dict[str, Any] = {"type": "string", "enum": ["Automatic", "Manual"]}
    if default_policy is not None:
        policy["default"] = default_policy
    props: dict[str, Any] = {
        "compositionRef": _named(name=_STRING),
        "compositionSelector": _selector(),
        "compositionRevisionRef": _named(name=_STRING),
        "compositionRevisionSelector": _selector(),
        "compositionUpdatePolicy": policy,
        "resourceRefs": _refs(scope == "Namespaced"),
    }
    if scope == "LegacyCluster":
        props["claimRef"] = {
            "type": "object",
            "required": ["apiVersion", "kind", "namespace", "name"],
            "properties": {
                "apiVersion": _STRING,
                "kind": _STRING,
                "namespace": _STRING,
                "name": _STRING,
            },
        }
        props["writeConnectionSecretToRef"] = {
            "type": "object",
            "required": ["name", "namespace"],
            "properties": {"name": _STRING, "namespace": _STRING},
        }
        return props
    return {
        "crossplane": {
            "type": "object",
            "description": "Configures how Crossplane will reconcile this composite resource",
            "properties": props,
        }
    }


def _status_props(scope: str) -> dict[str, Any]:
    """``CompositeResourceStatusProps``."""
    props: dict[str, Any] = {
        "conditions": {
            "description": "Conditions of the resource.",
            "type": "array",
            "x-kubernetes-list-map-keys": ["type"],
            "x-kubernetes-list-type": "map",
            "items": {
                "type": "object",
                "required": ["lastTransitionTime", "reason", "status", "type"],
                "properties": {
                    "lastTransitionTime": {"type": "string", "format": "date-time"},
                    "message": _STRING,
                    "reason": _STRING,
                    "status": _STRING,
                    "type": _STRING,
                    "observedGeneration": {"type": "integer", "format": "int64"},
                },
            },
        }
    }
    if scope == "LegacyCluster":
        props["connectionDetails"] = {
            "type": "object",
            "properties": {"lastPublishedTime": {"type": "string", "format": "date-time"}},
        }
        props["claimConditionTypes"] = {
            "type": "array",
            "x-kubernetes-list-type": "set",
            "items": _STRING,
        }
    return props


def _scope(xrd: Mapping[str, Any]) -> str:
    default = "Namespaced" if xrd["apiVersion"].endswith("/v2") else "LegacyCluster"
    return str(xrd["spec"].get("scope") or default)


def _schema(version: Mapping[str, Any], crossplane: str) -> dict[str, Any]:
    """``genCrdVersion``'s ``openAPIV3Schema``."""
    s = copy.deepcopy(version.get("schema", {}).get("openAPIV3Schema", {}))
    props = s.get("properties") or {}
    root: dict[str, Any] = {"type": "object", "required": ["spec"]}
    if "description" in s:
        root["description"] = s["description"]
    root_rules = s.get("x-kubernetes-validations")
    if root_rules and _version(crossplane) >= _version(
        FEATURE_SINCE["root x-kubernetes-validations"]
    ):
        root["x-kubernetes-validations"] = root_rules
    name_max = _MAX_NAME_LENGTH
    old = (props.get("metadata") or {}).get("properties", {}).get("name", {}).get("maxLength")
    if isinstance(old, int) and old < name_max:
        name_max = old
    x_spec = props.get("spec") or {}
    spec: dict[str, Any] = {"type": "object", "properties": {}}
    for key in (
        "required",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-validations",
        "oneOf",
        "description",
    ):
        if key in x_spec:
            spec[key] = x_spec[key]
    spec["properties"].update(x_spec.get("properties") or {})
    x_status = props.get("status") or {}
    status: dict[str, Any] = {"type": "object", "properties": {}}
    for key in ("required", "x-kubernetes-validations", "description", "oneOf"):
        if key in x_status:
            status[key] = x_status[key]
    status["properties"].update(x_status.get("properties") or {})
    root["properties"] = {
        "apiVersion": dict(_STRING),
        "kind": dict(_STRING),
        "metadata": {
            "type": "object",
            "properties": {"name": {"type": "string", "maxLength": name_max}},
        },
        "spec": spec,
        "status": status,
    }
    return root


def crd_for_xrd(xrd: Mapping[str, Any], crossplane: str = "2.3") -> dict[str, Any]:
    """The composite resource CRD Crossplane ``crossplane`` creates for ``xrd``."""
    scope = _scope(xrd)
    spec = xrd["spec"]
    default_policy = spec.get("defaultCompositionUpdatePolicy")
    versions = []
    for v in spec["versions"]:
        schema = _schema(v, crossplane)
        schema["properties"]["spec"]["properties"].update(_spec_props(scope, default_policy))
        schema["properties"]["status"]["properties"].update(_status_props(scope))
        subresources: dict[str, Any] = {"status": {}}
        scale = (v.get("subresources") or {}).get("scale")
        if scale and _version(crossplane) >= _version(FEATURE_SINCE["scale subresource"]):
            subresources["scale"] = copy.deepcopy(scale)
        versions.append(
            {
                "name": v["name"],
                "served": v.get("served", False),
                "storage": v.get("referenceable", False),
                "schema": {"openAPIV3Schema": schema},
                "subresources": subresources,
            }
        )
    names = dict(spec["names"])
    names["categories"] = [*names.get("categories", []), "composite"]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": xrd["metadata"]["name"]},
        "spec": {
            "group": spec["group"],
            "names": names,
            "scope": "Namespaced" if scope == "Namespaced" else "Cluster",
            "versions": versions,
        },
    }


def crossplane_features(xrd: Mapping[str, Any]) -> list[str]:
    """The features of ``xrd`` that only some Crossplane releases carry into the CRD."""
    used = []
    for v in xrd["spec"]["versions"]:
        if (v.get("subresources") or {}).get("scale"):
            used.append("scale subresource")
        if v.get("schema", {}).get("openAPIV3Schema", {}).get("x-kubernetes-validations"):
            used.append("root x-kubernetes-validations")
    return sorted(set(used))


def minimum_crossplane(xrd: Mapping[str, Any]) -> str:
    """The oldest Crossplane release that keeps everything ``xrd`` declares."""
    since = [FEATURE_SINCE[f] for f in crossplane_features(xrd)]
    return max(since, key=_version, default=CROSSPLANE_RELEASES[0])
