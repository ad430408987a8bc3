"""EKS provisioning: a placeholder on this branch; the EKS module replaces it whole."""

from __future__ import annotations

from collections.abc import Mapping

from modelplane.api import InferenceClass, InferenceCluster
from modelplane.composition.observed import Observed
from modelplane.naming import SYSTEM_NAMESPACE
from modelplane.reconcile.provision import Provisioned


def provision_eks(
    cluster: InferenceCluster, classes: Mapping[str, InferenceClass], observed: Observed
) -> Provisioned:
    """Nothing composed yet: EKS provisioning lands in its own module."""
    del classes, observed
    name = cluster.metadata.name or ""
    return Provisioned(
        (),
        False,
        (SYSTEM_NAMESPACE, f"{name}-kubeconfig", "kubeconfig"),
        "EKS provisioning is not built yet",
    )
