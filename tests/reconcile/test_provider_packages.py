"""The Configuration depends on every provider package whose kinds the cluster function composes."""

from __future__ import annotations

from modelplane.packaging import PROVIDER_AWS_SERVICES, PROVIDER_GCP_SERVICES
from modelplane.reconcile import provision_eks, provision_gke


def _groups(module: object) -> set[str]:
    """The API groups of the *_API constants a provisioning module composes."""
    return {
        value.split("/", 1)[0]
        for name, value in vars(module).items()
        if name.endswith("_API") and isinstance(value, str) and ".m.upbound.io/" in value
    }


def test_every_composed_aws_service_has_its_package() -> None:
    services = {g.split(".", 1)[0] for g in _groups(provision_eks)}
    assert services and services <= set(PROVIDER_AWS_SERVICES)


def test_every_composed_gcp_service_has_its_package() -> None:
    services = {g.split(".", 1)[0] for g in _groups(provision_gke)}
    assert services and services <= set(PROVIDER_GCP_SERVICES)
