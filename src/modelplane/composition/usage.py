"""Crossplane Usages: an InferenceCluster is not deleted while something is on it
(docs/reconcile.md, "Deletion protection").

A ``protection.crossplane.io/v1beta1`` Usage, composed beside what it protects: one per
ModelReplica by the deployment, one per staged cluster by a ModelCache. Crossplane's
admission webhook refuses to delete the Usage's ``of`` object while the Usage exists; the
``by`` object (the replica, the cache) is never blocked by it.

Two facts of Crossplane v2.3.4 shape it:

- A namespaced Usage names the cluster-scoped InferenceCluster with
  ``of.resourceRef.namespace: ""``. ``internal/protection/usage/finder.go`` indexes a Usage
  under that namespace, defaulting to the Usage's own when absent, and the webhook
  (``internal/webhook/protection/usage/handler.go``) looks a deleted object up under its
  own namespace, empty for a cluster-scoped one: without the explicit empty namespace the
  Usage would never block the delete.
- ``replayDeletion: true``: a delete the webhook refused is recorded on the cluster
  (``usage.crossplane.io/deletion-attempt-with-policy``) and replayed when a Usage of it
  goes (``internal/controller/protection/usage/reconciler.go``); while others remain the
  replay is refused again, so the delete goes through once the last one is gone.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.api import ModelCache, ModelReplica
from modelplane.api.base import GROUP_VERSION
from modelplane.composition.types import Json
from modelplane.naming import (
    CACHE_LABEL,
    CACHE_NAMESPACE_LABEL,
    CLUSTER_LABEL,
    DEPLOYMENT_LABEL,
    DEPLOYMENT_NAMESPACE_LABEL,
    INDEX_LABEL,
    cache_usage_name,
    replica_usage_name,
)

USAGE_API_VERSION = "protection.crossplane.io/v1beta1"
USAGE_KIND = "Usage"
# A delete refused while the cluster is in use goes through once the last Usage is gone
# (docs/reconcile.md, "Deletion protection", why).
REPLAY_DELETION = True

# The replica's managed labels a Usage carries, so that ``kubectl get usages -A -l
# modelplane.ai/cluster=<name>`` lists what holds a cluster.
_REPLICA_LABELS = (DEPLOYMENT_LABEL, DEPLOYMENT_NAMESPACE_LABEL, CLUSTER_LABEL, INDEX_LABEL)


@dataclass(frozen=True, slots=True)
class Usage:
    """InferenceCluster ``cluster`` is used by the ``by_kind`` ``by_name`` of ``namespace``."""

    name: str
    namespace: str
    cluster: str
    by_kind: str
    by_name: str
    labels: tuple[tuple[str, str], ...] = ()

    def to_wire(self) -> Json:
        """The Usage as written to the control plane."""
        metadata: Json = {"name": self.name, "namespace": self.namespace}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        return {
            "apiVersion": USAGE_API_VERSION,
            "kind": USAGE_KIND,
            "metadata": metadata,
            "spec": {
                "of": {
                    "apiVersion": GROUP_VERSION,
                    "kind": "InferenceCluster",
                    # Cluster-scoped: the empty namespace is what makes it block (above).
                    "resourceRef": {"name": self.cluster, "namespace": ""},
                },
                "by": {
                    "apiVersion": GROUP_VERSION,
                    "kind": self.by_kind,
                    "resourceRef": {"name": self.by_name},
                },
                "replayDeletion": REPLAY_DELETION,
            },
        }


def replica_usage(replica: ModelReplica) -> Usage:
    """The Usage of a replica's cluster, in the replica's namespace, named as the replica."""
    meta = replica.metadata
    name = meta.name or ""
    labels = meta.labels or {}
    return Usage(
        name=replica_usage_name(name),
        namespace=meta.namespace or "default",
        cluster=replica.spec.cluster_name,
        by_kind="ModelReplica",
        by_name=name,
        labels=tuple((k, labels[k]) for k in _REPLICA_LABELS if k in labels),
    )


def cache_usage(cache: ModelCache, cluster: str) -> Usage:
    """The Usage of a cluster a cache stages on, in the cache's namespace."""
    name = cache.metadata.name or ""
    namespace = cache.metadata.namespace or "default"
    return Usage(
        name=cache_usage_name(name, cluster),
        namespace=namespace,
        cluster=cluster,
        by_kind="ModelCache",
        by_name=name,
        labels=((CACHE_LABEL, name), (CACHE_NAMESPACE_LABEL, namespace), (CLUSTER_LABEL, cluster)),
    )
