"""GKE provisioning: network, cluster, node pools and identities (docs/provisioning.md)."""

from __future__ import annotations

from collections.abc import Mapping

from modelplane.api import InferenceClass, InferenceCluster
from modelplane.composition.observed import Observed
from modelplane.naming import SYSTEM_NAMESPACE
from modelplane.reconcile.provision import Provisioned


def provision_gke(
    cluster: InferenceCluster, classes: Mapping[str, InferenceClass], observed: Observed
) -> Provisioned:
    """The GKE managed resources of ``cluster``."""
    del classes, observed
    name = cluster.metadata.name or ""
    return Provisioned((), False, (SYSTEM_NAMESPACE, f"{name}-kubeconfig", "kubeconfig"), None)
