"""Provisioned clusters: what a cloud source composes before the cluster can serve.

Pure: the InferenceCluster, the InferenceClasses it names and its observed composed
resources in; the cloud's managed resources (network, cluster, node pools, identities),
whether they are all Ready, and where the cluster's kubeconfig lands out
(docs/provisioning.md). ``reconcile/cluster.py`` composes these before the cluster's
provider configs and stack, and reads ``connection`` for the ClusterProviderConfigs.

One module per cloud (``provision_gke``, ``provision_eks``); each exposes
``provision_<cloud>(cluster, classes, observed) -> Provisioned``. Conventions both follow:
every managed resource is namespaced (the ``.m.`` APIs of the Upbound providers) in
``naming.SYSTEM_NAMESPACE``, named ``naming.child_name(cluster, key)`` after its resource
key; resource keys start with the cloud (``gke-``, ``eks-``) so they never meet the stack's
(``stack-``, ``uses-``, ``require-``); teardown order (stack, then pools, then cluster, then
network) is kept by Usages built with ``reconcile.stack.usage``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from modelplane.api import InferenceClass, InferenceCluster
from modelplane.composition.observed import Observed
from modelplane.composition.types import ComposedObject


@dataclass(frozen=True, slots=True)
class Provisioned:
    """What one provisioned source composes for its cluster.

    ``objects``: the managed resources (and their Usages), each with its readiness flag;
    ``ready``: every one of them is observed Ready, so the cluster's API server answers
    with the kubeconfig in ``connection``; ``connection``: (namespace, Secret name, key)
    where the cluster's kubeconfig lands; ``message``: what is still provisioning, or the
    error that stops provisioning (a pool whose class has no recipe for the cloud), else None;
    ``identity``: what the provider configs add to the kubeconfig when it carries no
    credentials of its own (a GKE kubeconfig): (provider-kubernetes identity type, namespace,
    Secret name, key), else None.
    """

    objects: tuple[ComposedObject, ...]
    ready: bool
    connection: tuple[str, str, str]  # (namespace, secret name, key) of the kubeconfig
    message: str | None
    identity: tuple[str, str, str, str] | None = None  # (type, namespace, secret name, key)


def provision(
    cluster: InferenceCluster, classes: Mapping[str, InferenceClass], observed: Observed
) -> Provisioned | None:
    """What the cluster's source provisions, or None when the source is not provisioned here.

    ``classes``: the InferenceClasses found for the cluster's pools, by name.
    """
    source = cluster.spec.cluster.source
    if source == "GKE":
        from modelplane.reconcile.provision_gke import provision_gke

        return provision_gke(cluster, classes, observed)
    if source == "EKS":
        from modelplane.reconcile.provision_eks import provision_eks

        return provision_eks(cluster, classes, observed)
    return None
