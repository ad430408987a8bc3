"""ICL-10: a CPU-only InferenceClass may omit the accelerator; every other class still names it."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api.validation import validate_document
from tests.builders import (
    amd_device,
    cpu_device,
    gpu_device,
    inference_class,
)

ICL_10 = (
    "spec",
    "spec.provisioning.<provider>.accelerator is required unless the class is CPU-only "
    "(it claims dra.cpu devices and nothing else through DRA)",
)
# One block per provider, with its required fields and no accelerator.
BLOCKS: dict[str, tuple[str, dict[str, Any]]] = {
    "GKE": ("gke", {"machineType": "c3-standard-8"}),
    "EKS": ("eks", {"instanceType": "m7i.2xlarge"}),
    "AKS": ("aks", {"vmSize": "Standard_D8s_v5"}),
    "Nebius": ("nebius", {"platform": "cpu-d3", "preset": "8vcpu-32gb"}),
    "Vultr": ("vultr", {"plan": "vc2-8c-32gb"}),
}
NIC = {"name": "nic", "claim": "Synthetic", "driver": "rdma.example.com", "count": 1}


def _class(provider: str | None, accelerator: bool, *devices: dict[str, Any]) -> dict[str, Any]:
    doc = inference_class("c", *devices)
    if provider is not None:
        block, fields = BLOCKS[provider]
        body = dict(fields)
        if accelerator:
            body["accelerator"] = {"type": "nvidia-l4", "count": 1}
        doc["spec"]["provisioning"] = {"provider": provider, block: body}
    return doc


def _problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in validate_document(doc).problems]


@pytest.mark.parametrize("provider", sorted(BLOCKS))
@pytest.mark.parametrize(
    ("devices", "accelerator", "refused"),
    [
        ((cpu_device(),), False, False),  # a CPU class omits it
        ((cpu_device(), NIC), False, False),  # a synthetic NIC claims nothing
        ((cpu_device(),), True, False),  # and may still name one: it is not read
        ((gpu_device(1, "23034Mi"),), False, True),  # a GPU class must name it
        ((amd_device(),), False, True),  # so must an AMD one
        ((cpu_device(), gpu_device(1, "23034Mi")), False, True),  # GPU node with CPUs claimed
        ((NIC,), False, True),  # only synthetic devices: not a CPU class
        ((gpu_device(1, "23034Mi"),), True, False),
    ],
)
def test_accelerator_is_required_unless_cpu_only(
    provider: str, devices: tuple[dict[str, Any], ...], accelerator: bool, refused: bool
) -> None:
    problems = _problems(_class(provider, accelerator, *devices))
    assert problems == ([ICL_10] if refused else [])


def test_a_class_without_provisioning_never_needs_one() -> None:
    assert _problems(_class(None, False, gpu_device())) == []


def test_a_stray_block_of_another_provider_needs_one_too() -> None:
    """Every block present is a recipe and is validated, as the schema did before."""
    doc = _class("GKE", True, gpu_device())
    doc["spec"]["provisioning"]["eks"] = dict(BLOCKS["EKS"][1])
    assert _problems(doc) == [ICL_10]
