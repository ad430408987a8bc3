"""Pod metadata and pod specs of a member (docs/composition.md, "Pods")."""

from __future__ import annotations

from modelplane.composition.containers import (
    CACHE_VOLUME,
    CLAIM_NAME,
    DSHM_VOLUME,
    member_container,
)
from modelplane.composition.marker import wait_for_cache_container
from modelplane.composition.members import MemberContext, containers_of
from modelplane.composition.taints import pool_taints, toleration
from modelplane.composition.types import Json
from modelplane.naming import (
    DEPLOYMENT_LABEL,
    DEPLOYMENT_NAMESPACE_LABEL,
    ENGINE_LABEL,
    PHASE_LABEL,
    POOL_LABEL,
    REPLICA_LABEL,
    ROLE_LABEL,
    SERVING_LABEL,
    WORKLOAD_LABEL,
)

KAI_SCHEDULER = "kai-scheduler"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_QUEUE = "modelplane"


def managed_pod_labels(ctx: MemberContext) -> dict[str, str]:
    """The managed labels of this member's pods, in the table's order."""
    names = ctx.names
    labels = {
        DEPLOYMENT_LABEL: names.deployment,
        DEPLOYMENT_NAMESPACE_LABEL: names.namespace,
        REPLICA_LABEL: names.replica,
        ENGINE_LABEL: ctx.engine.name,
        ROLE_LABEL: ctx.member.role.lower(),
    }
    if ctx.serving:
        labels[SERVING_LABEL] = names.serving_key
    if ctx.kind == "Deployment":
        labels[WORKLOAD_LABEL] = names.deployment_workload(ctx.engine.name)
    if ctx.serving and ctx.engine.phase is not None:
        phase = ctx.engine.phase.lower()
        labels["llm-d.ai/role"] = phase
        labels[PHASE_LABEL] = phase
    if ctx.dynamo_gang:
        labels[KAI_QUEUE_LABEL] = KAI_QUEUE
    return labels


def pod_labels(ctx: MemberContext) -> dict[str, str]:
    """The member's template labels with the managed labels laid over them (managed win)."""
    metadata = ctx.member.template.metadata
    user = dict(metadata.labels or {}) if metadata is not None else {}
    return {**user, **managed_pod_labels(ctx)}


def pod_annotations(ctx: MemberContext) -> dict[str, str] | None:
    """The member's template annotations; None when there are none (the key is omitted)."""
    metadata = ctx.member.template.metadata
    annotations = metadata.annotations if metadata is not None else None
    return dict(annotations) if annotations else None


def pod_metadata(ctx: MemberContext) -> Json:
    """``{labels, annotations?}`` of a pod template."""
    out: Json = {"labels": pod_labels(ctx)}
    annotations = pod_annotations(ctx)
    if annotations is not None:
        out["annotations"] = annotations
    return out


def pod_volumes(ctx: MemberContext) -> list[Json]:
    """``/dev/shm`` as memory, then the ModelCache PVC when the replica has a cache."""
    volumes: list[Json] = [{"name": DSHM_VOLUME, "emptyDir": {"medium": "Memory"}}]
    if ctx.cache_pvc is not None:
        volumes.append(
            {"name": CACHE_VOLUME, "persistentVolumeClaim": {"claimName": ctx.cache_pvc}}
        )
    return volumes


def pod_tolerations(ctx: MemberContext) -> list[Json]:
    """The taints of the member's pool, by the drivers of its devices (docs/composition.md,
    "Tolerations by pool"). The template has no tolerations of its own to keep: a
    deployment's tolerations are matched against cluster taints by the scheduler.
    """
    return [toleration(key) for key in pool_taints(ctx.pool_drivers)]


def pod_spec(ctx: MemberContext) -> Json:
    """The pod spec of every pod of the member: the template plus our plumbing."""
    spec: Json = {
        "nodeSelector": {POOL_LABEL: ctx.member.node_pool_name},
        "tolerations": pod_tolerations(ctx),
    }
    if ctx.claims:
        rct = ctx.names.claim_template(ctx.engine.name, ctx.member.role)
        spec["resourceClaims"] = [{"name": CLAIM_NAME, "resourceClaimTemplateName": rct}]
    if ctx.dynamo_gang:
        spec["schedulerName"] = KAI_SCHEDULER
    if ctx.cache_pvc is not None:
        # The engine never starts on a half-staged cache: wait for the marker.
        spec["initContainers"] = [wait_for_cache_container()]
    spec["containers"] = [member_container(ctx, c) for c in containers_of(ctx.member)]
    spec["volumes"] = pod_volumes(ctx)
    template_spec = ctx.member.template.spec
    if template_spec is not None and template_spec.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": s.name} for s in template_spec.image_pull_secrets]
    return spec
