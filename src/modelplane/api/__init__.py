"""The API: typed models of every kind Modelplane serves or reads (pure; no I/O)."""

from modelplane.api.base import GROUP_VERSION, RULES, KubeModel, Rule
from modelplane.api.inferenceclass import Device, InferenceClass, TypedValue
from modelplane.api.inferencecluster import GpuPool, InferenceCluster, PoolDevice, Taint
from modelplane.api.inferencegateway import InferenceGateway
from modelplane.api.kinds import KIND_BY_NAME, KINDS, KindInfo
from modelplane.api.meta import Condition, ObjectMeta
from modelplane.api.metricmapping import MetricMapping
from modelplane.api.modelcache import ModelCache
from modelplane.api.modeldeployment import (
    DeviceRequest,
    Engine,
    EngineMember,
    ModelDeployment,
    Toleration,
)
from modelplane.api.modelendpoint import ModelEndpoint
from modelplane.api.modelreplica import (
    ModelReplica,
    ReplicaEngine,
    ReplicaMember,
    ResolvedDeviceRequest,
)
from modelplane.api.modelservice import ModelService
from modelplane.api.telemetrydestination import TelemetryDestination

__all__ = [
    "GROUP_VERSION",
    "KINDS",
    "KIND_BY_NAME",
    "RULES",
    "Condition",
    "Device",
    "DeviceRequest",
    "Engine",
    "EngineMember",
    "GpuPool",
    "InferenceClass",
    "InferenceCluster",
    "InferenceGateway",
    "KindInfo",
    "KubeModel",
    "MetricMapping",
    "ModelCache",
    "ModelDeployment",
    "ModelEndpoint",
    "ModelReplica",
    "ModelService",
    "ObjectMeta",
    "PoolDevice",
    "ReplicaEngine",
    "ReplicaMember",
    "ResolvedDeviceRequest",
    "Rule",
    "Taint",
    "TelemetryDestination",
    "Toleration",
    "TypedValue",
]
