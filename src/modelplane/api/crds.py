"""The CompositeResourceDefinitions of the six kinds, generated from the models (pure).

docs/crossplane.md, "What gets installed" fixes their shape; docs/api.md, "Kinds, identity
and managed labels" and each kind's identity
table give names, scope, printer columns and the ModelDeployment scale
subresource. The schema is :func:`modelplane.api.openapi.crd_schema`, so the
rules the cluster runs are the very rules ``modelplane validate`` runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from modelplane.api.base import API_GROUP, API_VERSION
from modelplane.api.kinds import KINDS, KindInfo
from modelplane.api.openapi import crd_schema

XRD_API_VERSION = "apiextensions.crossplane.io/v2"


def xrd_name(info: KindInfo) -> str:
    """``<plural>.modelplane.ai``."""
    return f"{info.plural}.{API_GROUP}"


def xrd(info: KindInfo) -> dict[str, Any]:
    """The XRD of one kind."""
    schema = crd_schema(info.model)
    schema["description"] = info.description
    version: dict[str, Any] = {"name": API_VERSION, "served": True, "referenceable": True}
    if info.printer_columns:
        version["additionalPrinterColumns"] = [
            {"name": c.name, "type": c.type, "jsonPath": c.json_path} for c in info.printer_columns
        ]
    if info.scale:
        # No labelSelectorPath: the replica pods run on other clusters (docs/api.md, "Kinds,
        # identity and managed labels").
        version["subresources"] = {
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas.total",
            }
        }
    version["schema"] = {"openAPIV3Schema": schema}
    return {
        "apiVersion": XRD_API_VERSION,
        "kind": "CompositeResourceDefinition",
        "metadata": {"name": xrd_name(info)},
        "spec": {
            "group": API_GROUP,
            "names": {
                "kind": info.kind,
                "plural": info.plural,
                "singular": info.singular,
                "shortNames": [info.short_name],
                "categories": list(info.categories),
            },
            "scope": info.scope,
            "defaultCompositionRef": {"name": xrd_name(info)},
            "versions": [version],
        },
    }


def xrds() -> list[dict[str, Any]]:
    """The XRDs of every kind, in the order of the kinds."""
    return [xrd(info) for info in KINDS]


def xrd_file_name(definition: dict[str, Any]) -> str:
    """The file ``crds --out`` writes an XRD to: ``<plural>.modelplane.ai.yaml``."""
    return f"{definition['metadata']['name']}.yaml"


class _Dumper(yaml.SafeDumper):
    """Plain block YAML without anchors, so generated files diff cleanly."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render_xrds(definitions: Iterable[dict[str, Any]]) -> str:
    """A YAML stream of the definitions, one document each."""
    return "".join(
        "---\n"
        + yaml.dump(
            d,
            Dumper=_Dumper,
            sort_keys=False,
            default_flow_style=False,
            width=1 << 16,
            allow_unicode=True,
        )
        for d in definitions
    )
