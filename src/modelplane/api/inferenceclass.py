"""InferenceClass: the devices one node of a pool of this class offers."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from modelplane.api.base import (
    GROUP_VERSION,
    FreeForm,
    KubeModel,
    OpenModel,
    list_map,
    rule,
    validations,
)
from modelplane.api.meta import CONDITIONS_LIST, Condition, ObjectMeta

Provider = Literal["GKE", "EKS", "AKS", "Nebius", "Vultr"]
Claim = Literal["DRA", "Synthetic"]


def _required_block(rule_id: str, base: str, field: str, value: str, block: str) -> object:
    return rule(
        rule_id,
        f"self.{field} != '{value}' || has(self.{block})",
        f"{base}.{block} is required when {base}.{field} is {value}.",
    )


_PROVIDERS = [
    ("GKE", "gke"),
    ("EKS", "eks"),
    ("AKS", "aks"),
    ("Nebius", "nebius"),
    ("Vultr", "vultr"),
]
ICL_PROVIDER_RULES = [
    _required_block(f"ICL-0{i + 1}", "spec.provisioning", "provider", value, block)
    for i, (value, block) in enumerate(_PROVIDERS)
]
ICL_06 = rule(
    "ICL-06",
    "[has(self.string), has(self.version), has(self.bool), has(self.int)].filter(x, x).size() == 1",
    "exactly one of string, version, bool, int must be set",
)
ICL_07 = rule(
    "ICL-07",
    "self.claim != 'DRA' || has(self.deviceClassName)",
    "deviceClassName is required when claim is DRA",
)
ICL_08 = rule(
    "ICL-08",
    "isQuantity(self.value)",
    'capacity value must be a Kubernetes quantity, such as "141Gi"',
)
ICL_09 = rule(
    "ICL-09",
    "!has(self.version) || isSemver(self.version)",
    'version must be a semantic version major.minor.patch, such as "9.0.0"',
)
# A class that claims CPUs and nothing else through DRA describes a node without an
# accelerator, so its provisioning blocks may omit one (docs/api.md, "Rules this project adds").
ICL_10 = rule(
    "ICL-10",
    "!has(self.provisioning) || (self.devices.exists(d, d.driver == 'dra.cpu') && "
    "self.devices.all(d, d.driver == 'dra.cpu' || d.claim == 'Synthetic')) || "
    + " && ".join(
        f"(!has(self.provisioning.{block}) || has(self.provisioning.{block}.accelerator))"
        for _, block in _PROVIDERS
    ),
    "spec.provisioning.<provider>.accelerator is required unless the class is CPU-only "
    "(it claims dra.cpu devices and nothing else through DRA)",
)


class Accelerator(KubeModel):
    """The accelerators of one machine."""

    type: str = Field(min_length=1, max_length=63)
    count: int = Field(ge=1, le=16)


class GKEPool(KubeModel):
    """How GKE would create such a pool."""

    machine_type: str = Field(min_length=1)
    disk_size_gb: int = Field(default=100, ge=10)
    accelerator: Accelerator | None = Field(
        default=None, description="Required unless the class is CPU-only (ICL-10)."
    )


class EKSPool(KubeModel):
    """How EKS would create such a pool."""

    instance_type: str = Field(min_length=1)
    disk_size_gb: int = Field(default=100, ge=10)
    accelerator: Accelerator | None = Field(
        default=None, description="Required unless the class is CPU-only (ICL-10)."
    )


class AKSPool(KubeModel):
    """How AKS would create such a pool."""

    vm_size: str = Field(min_length=1)
    disk_size_gb: int = Field(default=100, ge=10)
    accelerator: Accelerator | None = Field(
        default=None, description="Required unless the class is CPU-only (ICL-10)."
    )


class NebiusPool(KubeModel):
    """How Nebius would create such a pool."""

    platform: str = Field(min_length=1, max_length=63)
    preset: str = Field(min_length=1, max_length=63)
    disk_size_gb: int = Field(default=100, ge=10)
    drivers_preset: str = Field(default="cuda13.0", min_length=1, max_length=63)
    accelerator: Accelerator | None = Field(
        default=None, description="Required unless the class is CPU-only (ICL-10)."
    )


class VultrPool(KubeModel):
    """How Vultr would create such a pool."""

    plan: str = Field(min_length=1, max_length=63)
    accelerator: Accelerator | None = Field(
        default=None, description="Required unless the class is CPU-only (ICL-10)."
    )


class Provisioning(KubeModel):
    """How a cloud would create a pool of this class: read when a cluster of that cloud is
    provisioned (docs/provisioning.md)."""

    model_config = ConfigDict(json_schema_extra=validations(*ICL_PROVIDER_RULES))  # type: ignore[arg-type]

    provider: Provider
    gke: GKEPool | None = None
    eks: EKSPool | None = None
    aks: AKSPool | None = None
    nebius: NebiusPool | None = None
    vultr: VultrPool | None = None


class TypedValue(KubeModel):
    """A device attribute: exactly one of string, version, bool, int."""

    model_config = ConfigDict(json_schema_extra=validations(ICL_06, ICL_09))

    string_: str | None = Field(default=None, alias="string", max_length=253)
    version: str | None = Field(default=None, max_length=32)
    bool_: bool | None = Field(default=None, alias="bool")
    int_: int | None = Field(default=None, alias="int")


class CapacityValue(KubeModel):
    """A device capacity, as a Kubernetes quantity."""

    model_config = ConfigDict(json_schema_extra=validations(ICL_08))

    value: str = Field(min_length=1, max_length=32)


class Device(KubeModel):
    """A device each node of a pool of this class offers."""

    model_config = ConfigDict(json_schema_extra=validations(ICL_07))

    name: str = Field(min_length=1, max_length=63, description="E.g. gpu, nic, efa.")
    claim: Claim = Field(
        default="DRA",
        description="DRA: a match becomes a DeviceRequest. Synthetic: placement only, never claimed.",
    )
    driver: str = Field(
        min_length=1, max_length=253, description="The attribute and capacity domain."
    )
    device_class_name: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        description="The DRA DeviceClass to claim through.",
    )
    count: int = Field(default=1, ge=1, le=64, description="How many such devices each node has.")
    attributes: Annotated[dict[str, TypedValue], Field(max_length=32)] | None = None
    capacity: Annotated[dict[str, CapacityValue], Field(max_length=32)] | None = None


class InferenceClassSpec(KubeModel):
    """A hardware recipe."""

    model_config = ConfigDict(json_schema_extra=validations(ICL_10))

    description: str | None = None
    provisioning: Provisioning | None = None
    devices: Annotated[
        tuple[Device, ...], Field(min_length=1, max_length=16, json_schema_extra=list_map("name"))
    ]
    crossplane: FreeForm | None = None


class InferenceClassStatus(OpenModel):
    """Not read."""

    conditions: (
        Annotated[tuple[Condition, ...], Field(json_schema_extra=CONDITIONS_LIST)] | None
    ) = None


class InferenceClass(KubeModel):
    """A hardware recipe: the devices one node of a pool offers."""

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["InferenceClass"] = "InferenceClass"
    metadata: ObjectMeta
    spec: InferenceClassSpec
    status: InferenceClassStatus | None = None
