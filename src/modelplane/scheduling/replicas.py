"""Replica ownership, identity, and the ModelReplica written for a placement (docs/scheduling.md,
"Inputs, identity and result"; docs/composition.md, "The ModelReplica of a placement").
"""

from __future__ import annotations

import re

from modelplane.api import ModelDeployment, ModelEndpoint, ModelReplica
from modelplane.api.meta import ObjectMeta
from modelplane.api.modeldeployment import Engine, EngineMember, ReplicaServing
from modelplane.api.modelreplica import (
    ModelReplicaSpec,
    ReplicaEngine,
    ReplicaMember,
    ReplicaSelector,
    ResolvedDeviceRequest,
)
from modelplane.api.pod import ReplicaPodTemplate
from modelplane.composition.namespaces import team_namespace
from modelplane.naming import (
    CLUSTER_LABEL,
    DEPLOYMENT_LABEL,
    DEPLOYMENT_NAMESPACE_LABEL,
    INDEX_LABEL,
    REMOTE_NAMESPACE_LABEL,
    TEMPLATE_HASH_LABEL,
    template_hash,
)
from modelplane.scheduling.model import EnginePlacement, MemberPlacement, Placement, namespace_of

_DIGITS = re.compile(r"^[0-9]+$")


def owns(deployment: ModelDeployment, obj: ModelReplica | ModelEndpoint) -> bool:
    """A replica or endpoint belongs to a deployment by (namespace, name label)."""
    labels = obj.metadata.labels or {}
    return labels.get(DEPLOYMENT_LABEL) == deployment.metadata.name and namespace_of(
        obj.metadata.namespace
    ) == namespace_of(deployment.metadata.namespace)


def index_of(labels: dict[str, str] | None) -> int:
    """The replica-index label as a decimal; absent or not ``^[0-9]+$`` reads 0."""
    value = (labels or {}).get(INDEX_LABEL, "")
    return int(value) if _DIGITS.match(value) else 0


def identity(replica: ModelReplica) -> tuple[str, int]:
    """A replica's identity (cluster, index)."""
    return replica.spec.cluster_name, index_of(replica.metadata.labels)


def sort_key(replica: ModelReplica) -> tuple[str, str]:
    """Observed replicas are walked in (namespace, name) order."""
    meta = replica.metadata
    return meta.namespace or "default", meta.name or ""


def managed_labels(deployment: ModelDeployment, cluster: str, index: int) -> dict[str, str]:
    """The four managed labels (docs/api.md, "Kinds, identity and managed labels")."""
    return {
        DEPLOYMENT_LABEL: deployment.metadata.name or "",
        DEPLOYMENT_NAMESPACE_LABEL: namespace_of(deployment.metadata.namespace),
        CLUSTER_LABEL: cluster,
        INDEX_LABEL: str(index),
    }


def replica_object(deployment: ModelDeployment, placement: Placement) -> ModelReplica:
    """The ModelReplica composed for one placement.

    A held placement is re-emitted with its observed spec unchanged and its
    managed labels re-asserted over its observed labels (docs/scheduling.md, "What it does, in
    order"), its template
    hash label included (it still runs that revision). Any other placement is written from
    the current template and labelled with its hash.
    """
    namespace = namespace_of(deployment.metadata.namespace)
    managed = managed_labels(deployment, placement.cluster, placement.index)
    if placement.held and placement.observed is not None:
        labels = {**(placement.observed.metadata.labels or {}), **managed}
        return ModelReplica(
            metadata=ObjectMeta(name=placement.name, namespace=namespace, labels=labels),
            spec=placement.observed.spec,
        )
    template = deployment.spec.template
    labels = {
        **((template.metadata.labels if template.metadata else None) or {}),
        **managed,
        TEMPLATE_HASH_LABEL: placement.revision or template_hash(template.to_wire()),
    }
    labels.pop(REMOTE_NAMESPACE_LABEL, None)
    remote = _remote_label(deployment, placement)
    if remote is not None:
        labels[REMOTE_NAMESPACE_LABEL] = remote
    serving = template.spec.serving
    spec = ModelReplicaSpec(
        cluster_name=placement.cluster,
        model_cache_ref=template.spec.model_cache_ref,
        # The replica's serving block is the deployment's as written (its own schema).
        serving=ReplicaServing.model_validate(serving.to_wire()) if serving is not None else None,
        engines=tuple(
            _engine(engine, placed)
            for engine, placed in zip(template.spec.engines, placement.engines, strict=True)
        ),
    )
    return ModelReplica(
        metadata=ObjectMeta(name=placement.name, namespace=namespace, labels=labels), spec=spec
    )


def _remote_label(deployment: ModelDeployment, placement: Placement) -> str | None:
    """The replica's ``modelplane.ai/remote-namespace`` label (None: none).

    A replica already written keeps where its objects are, an earlier release's included
    (no label): moving them is a replacement, never an update in place (scheduler
    ``_refused``). A new one goes to its deployment's team namespace
    (composition/namespaces.py).
    """
    if placement.observed is not None:
        return (placement.observed.metadata.labels or {}).get(REMOTE_NAMESPACE_LABEL)
    cached = deployment.spec.template.spec.model_cache_ref is not None
    return team_namespace(namespace_of(deployment.metadata.namespace), cached)


def _engine(engine: Engine, placed: EnginePlacement) -> ReplicaEngine:
    """One engine of the replica: the deployment's engine with its members pinned."""
    return ReplicaEngine(
        name=engine.name,
        copies=engine.copies,
        phase=engine.phase,
        members=tuple(_member(m, p) for m, p in zip(engine.members, placed.members, strict=True)),
    )


def _member(member: EngineMember, placed: MemberPlacement) -> ReplicaMember:
    """One member pinned to its pool, with the device requests it resolved there."""
    requests = tuple(
        ResolvedDeviceRequest(
            name=r.name,
            device_class_name=r.device_class_name,
            count=r.count,
            selectors=tuple(ReplicaSelector(cel=s) for s in r.selectors),
        )
        for r in placed.device_requests
    )
    return ReplicaMember(
        role=member.role,
        node_pool_name=placed.pool,
        device_requests=requests or None,
        worker=member.worker,
        # The member's pod template as written, validated by the replica's own schema.
        template=ReplicaPodTemplate.model_validate(member.template.to_wire()),
    )
