"""The ten kinds: identity, scope, names and printer columns (docs/api.md, "Kinds, identity and
managed labels").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from modelplane.api.base import KubeModel
from modelplane.api.inferenceclass import InferenceClass
from modelplane.api.inferencecluster import InferenceCluster
from modelplane.api.inferencegateway import InferenceGateway
from modelplane.api.metricmapping import MetricMapping
from modelplane.api.modelcache import ModelCache
from modelplane.api.modeldeployment import ModelDeployment
from modelplane.api.modelendpoint import ModelEndpoint
from modelplane.api.modelreplica import ModelReplica
from modelplane.api.modelservice import ModelService
from modelplane.api.telemetrydestination import TelemetryDestination

Scope = Literal["Namespaced", "Cluster"]


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """An additional printer column of the XRD."""

    name: str
    json_path: str
    type: str = "string"


@dataclass(frozen=True, slots=True)
class KindInfo:
    """Everything the CLI and the XRD generator need to know about one kind."""

    kind: str
    model: type[KubeModel]
    scope: Scope
    short_name: str
    plural: str
    description: str
    printer_columns: tuple[PrinterColumn, ...] = ()
    scale: bool = False
    categories: tuple[str, ...] = field(default=("crossplane", "modelplane"))

    @property
    def namespaced(self) -> bool:
        """True for namespaced kinds."""
        return self.scope == "Namespaced"

    @property
    def singular(self) -> str:
        """The lowercase singular name."""
        return self.kind.lower()


# In this order: error messages list kinds in this order.
KINDS: tuple[KindInfo, ...] = (
    KindInfo(
        "ModelDeployment",
        ModelDeployment,
        "Namespaced",
        "md",
        "modeldeployments",
        "Deploy a model to the fleet, from one pod to disaggregated prefill and decode.",
        # An integer column, as the value is (not a string, unlike the first specification).
        (PrinterColumn("REPLICAS", ".status.replicas.ready", "integer"),),
        scale=True,
    ),
    KindInfo(
        "ModelReplica",
        ModelReplica,
        "Namespaced",
        "mr",
        "modelreplicas",
        "One complete serving instance of a ModelDeployment, pinned to one InferenceCluster.",
        (PrinterColumn("CLUSTER", ".spec.clusterName"),),
    ),
    KindInfo(
        "InferenceClass",
        InferenceClass,
        "Cluster",
        "icl",
        "inferenceclasses",
        "A hardware recipe: the devices one node of a pool of this class offers.",
    ),
    KindInfo(
        "InferenceCluster",
        InferenceCluster,
        "Cluster",
        "ic",
        "inferenceclusters",
        "One Kubernetes cluster of the fleet: labels, taints, serving stack and GPU pools.",
        (
            PrinterColumn("SOURCE", ".spec.cluster.source"),
            PrinterColumn("STACK", ".status.stack.phase"),
            PrinterColumn("GATEWAY", ".status.gateway.address"),
        ),
    ),
    KindInfo(
        "ModelCache",
        ModelCache,
        "Namespaced",
        "mc",
        "modelcaches",
        "Model weights staged once per matching cluster.",
        (
            PrinterColumn("SOURCE", ".spec.huggingFace.repo"),
            PrinterColumn("READY", ".status.summary.ready"),
        ),
    ),
    KindInfo(
        "ModelEndpoint",
        ModelEndpoint,
        "Namespaced",
        "me",
        "modelendpoints",
        "One reachable OpenAI- or Anthropic-compatible backend.",
        (PrinterColumn("ORIGIN", ".spec.origin"), PrinterColumn("MODEL", ".spec.model")),
    ),
    # One address per model.
    KindInfo(
        "ModelService",
        ModelService,
        "Namespaced",
        "ms",
        "modelservices",
        "One stable address that balances over the ModelEndpoints it selects.",
        (PrinterColumn("ADDRESS", ".status.address"),),
    ),
    KindInfo(
        "InferenceGateway",
        InferenceGateway,
        "Cluster",
        "ig",
        "inferencegateways",
        "The control plane's front door; the one named default serves every ModelService.",
        (PrinterColumn("ADDRESS", ".status.address"),),
    ),
    KindInfo(
        "TelemetryDestination",
        TelemetryDestination,
        "Cluster",
        "td",
        "telemetrydestinations",
        "Where the fleet's metrics go, and which InferenceClusters send them.",
        (PrinterColumn("EXPORTER", ".spec.exporter.type"),),
    ),
    KindInfo(
        "MetricMapping",
        MetricMapping,
        "Cluster",
        "mm",
        "metricmappings",
        "Renames from a component's metrics onto the modelplane_* vocabulary.",
    ),
)

KIND_BY_NAME: dict[str, KindInfo] = {k.kind: k for k in KINDS}
