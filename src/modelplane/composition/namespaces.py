"""Which namespace a replica's remote objects are in on its cluster (docs/composition.md,
"Team namespaces").

A replica's remote objects go into the namespace named for its deployment's namespace on
the control plane (``ml-team`` there, ``ml-team`` on every cluster), so a cluster admin can
give each team its own quota, RBAC and network policy. Three exceptions keep the shared
``default`` namespace of earlier releases:

- a deployment in ``default`` (nothing to separate), or in a namespace a cluster keeps for
  itself or for us (``kube-*``, ``modelplane-system``): a team's pods never go there, and we
  never create, label or own those namespaces;
- a deployment whose template names a ModelCache: caches still stage their PVC in
  ``default``, and a pod mounts only a PVC of its own namespace;
- a replica written by an earlier release (no ``modelplane.ai/remote-namespace`` label):
  its objects stay where they are until the deployment replaces it (make-before-break);
  moving them in place would delete and re-create every one of them.

Pure.
"""

from __future__ import annotations

from typing import Final

from modelplane.api import ModelReplica
from modelplane.naming import REMOTE_NAMESPACE_LABEL, SYSTEM_NAMESPACE, TEAM_NAMESPACE_LABEL

SHARED_NAMESPACE: Final = "default"
"""The namespace every replica's objects were in before team namespaces; still the one of
the exceptions above."""

RESERVED_NAMESPACES: Final = frozenset(
    {SHARED_NAMESPACE, "kube-system", "kube-public", "kube-node-lease", SYSTEM_NAMESPACE}
)
"""Namespaces a team's objects never get their own copy of: they map to ``default``."""

MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "modelplane"

# The Namespace Object never deletes its namespace (docs/composition.md, "Team namespaces"):
# the namespace may predate us or hold the team's own quota, RBAC and policies, and deleting
# a namespace deletes everything in it. crossplane-runtime v2.0.0-rc.1 supports this set
# (pkg/reconciler/managed/policies.go, defaultSupportedManagementPolicies).
NAMESPACE_MANAGEMENT_POLICIES: Final = ("Observe", "Create", "Update", "LateInitialize")


MAX_TEAM_NAMESPACES: Final = 128
"""The most team namespaces a cluster composes (docs/scale.md, "The largest answer"): each
adds its Namespace and the pickers' shared objects, about 5.6 kB of the cluster's answer at the
longest names, so 8,192 replicas each in its own namespace would answer 48 MB, over the
4 MiB Crossplane receives. The namespaces composed already keep their place; the others wait,
named in a Warning event (their pickers have no ServiceAccount, so their replicas never turn
Ready and the replicas they replace keep serving)."""


def bounded_team_namespaces(
    found: set[str], composed: set[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The team namespaces a cluster composes and those over ``MAX_TEAM_NAMESPACES``, each
    sorted: the ones ``composed`` before first, then newcomers by name."""
    teams = sorted(ns for ns in found if is_team_namespace(ns))
    ordered = [ns for ns in teams if ns in composed] + [ns for ns in teams if ns not in composed]
    return (
        tuple(sorted(ordered[:MAX_TEAM_NAMESPACES])),
        tuple(sorted(ordered[MAX_TEAM_NAMESPACES:])),
    )


def team_namespace(namespace: str | None, cached: bool) -> str:
    """The remote namespace of a new replica of a deployment in ``namespace``.

    ``cached``: the deployment's template names a ModelCache (its PVC is in ``default``).
    """
    ns = namespace or SHARED_NAMESPACE
    if cached or ns in RESERVED_NAMESPACES or ns.startswith("kube-"):
        return SHARED_NAMESPACE
    return ns


def desired_remote_namespace(replica: ModelReplica) -> str:
    """Where ``replica``'s objects belong now: its namespace's team namespace."""
    return team_namespace(replica.metadata.namespace, replica.spec.model_cache_ref is not None)


def remote_namespace(replica: ModelReplica) -> str:
    """Where ``replica``'s objects are: its ``modelplane.ai/remote-namespace`` label, or the
    shared ``default`` of a replica an earlier release wrote."""
    labels = replica.metadata.labels or {}
    return labels.get(REMOTE_NAMESPACE_LABEL) or SHARED_NAMESPACE


def is_team_namespace(namespace: str) -> bool:
    """Whether ``namespace`` is one we create on a cluster (not ``default`` or reserved)."""
    return team_namespace(namespace, cached=False) == namespace != SHARED_NAMESPACE


def namespace_manifest(namespace: str) -> dict[str, object]:
    """The team Namespace on a workload cluster, labelled as ours and as the team's."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": namespace,
            "labels": {TEAM_NAMESPACE_LABEL: namespace, MANAGED_BY_LABEL: MANAGED_BY},
        },
    }
