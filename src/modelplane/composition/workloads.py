"""The workload of each engine: Deployment, LeaderWorkerSet or Grove PodCliqueSet
(docs/composition.md, "Objects, in order").
"""

from __future__ import annotations

from collections.abc import Mapping

from modelplane.api import ReplicaEngine
from modelplane.composition.gangs import GANG_GROUP, LEADER_CLIQUE, WORKER_CLIQUE
from modelplane.composition.members import MemberContext, worker_nodes, workload_kind
from modelplane.composition.names import ReplicaNames
from modelplane.composition.pods import pod_annotations, pod_labels, pod_metadata, pod_spec
from modelplane.composition.types import Json, Stack
from modelplane.naming import WORKLOAD_LABEL


def _contexts(
    names: ReplicaNames,
    engine: ReplicaEngine,
    stack: Stack,
    cache_pvc: str | None,
    pools: Mapping[str, frozenset[str]],
) -> dict[str, MemberContext]:
    return {
        m.role: MemberContext(
            names, engine, m, stack, cache_pvc, pools.get(m.node_pool_name, frozenset())
        )
        for m in engine.members
    }


def engine_deployment(ctx: MemberContext) -> Json:
    """The Deployment of a Standalone engine; rolling updates never surge."""
    name = ctx.names.deployment_workload(ctx.engine.name)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ctx.names.remote},
        "spec": {
            "replicas": ctx.engine.copies,
            # The scheduler reserved devices for `copies` pods only: a surge pod on a full
            # pool would wait forever and stall the rollout.
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
            },
            "selector": {"matchLabels": {WORKLOAD_LABEL: name}},
            "template": {"metadata": pod_metadata(ctx), "spec": pod_spec(ctx)},
        },
    }


def leader_worker_set(leader: MemberContext, worker: MemberContext) -> Json:
    """The LeaderWorkerSet of a Leader + Worker engine on the Standard stack."""
    engine = leader.engine
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": leader.names.leader_worker_set(engine.name),
            "namespace": leader.names.remote,
        },
        "spec": {
            "replicas": engine.copies,
            "leaderWorkerTemplate": {
                "size": 1 + worker_nodes(worker.member),
                "leaderTemplate": {"metadata": pod_metadata(leader), "spec": pod_spec(leader)},
                "workerTemplate": {"metadata": pod_metadata(worker), "spec": pod_spec(worker)},
            },
        },
    }


def _clique(ctx: MemberContext, name: str, replicas: int) -> Json:
    clique: Json = {"name": name, "labels": pod_labels(ctx)}
    annotations = pod_annotations(ctx)
    if annotations is not None:
        clique["annotations"] = annotations
    clique["spec"] = {
        "roleName": name,
        "replicas": replicas,
        "minAvailable": replicas,
        "podSpec": pod_spec(ctx),
    }
    return clique


def pod_clique_set(leader: MemberContext, worker: MemberContext) -> Json:
    """The Grove PodCliqueSet of a Leader + Worker engine on the Dynamo stack.

    Fields the Grove webhook would default are set explicitly so that the provider does
    not fight the webhook; each copy of the engine is one scaling-group replica.
    """
    engine = leader.engine
    nodes = worker_nodes(worker.member)
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {
            "name": leader.names.pod_clique_set(engine.name),
            "namespace": leader.names.remote,
        },
        "spec": {
            "replicas": 1,
            "template": {
                "cliqueStartupType": "CliqueStartupTypeExplicit",
                "terminationDelay": "4h",
                "headlessServiceConfig": {"publishNotReadyAddresses": True},
                "cliques": [
                    _clique(leader, LEADER_CLIQUE, 1),
                    _clique(worker, WORKER_CLIQUE, nodes),
                ],
                "podCliqueScalingGroups": [
                    {
                        "name": GANG_GROUP,
                        "cliqueNames": [LEADER_CLIQUE, WORKER_CLIQUE],
                        "replicas": engine.copies,
                        "minAvailable": engine.copies,
                    }
                ],
            },
        },
    }


def engine_workload(
    names: ReplicaNames,
    engine: ReplicaEngine,
    stack: Stack,
    cache_pvc: str | None,
    pools: Mapping[str, frozenset[str]] | None = None,
) -> Json:
    """The one workload an engine yields on a cluster of the given stack; ``pools`` are the
    DRA drivers known of each pool (``taints.pool_drivers``), which decide the tolerations.
    """
    contexts = _contexts(names, engine, stack, cache_pvc, pools or {})
    kind = workload_kind(engine, stack)
    if kind == "Deployment":
        return engine_deployment(contexts[engine.members[0].role])
    if kind == "PodCliqueSet":
        return pod_clique_set(contexts["Leader"], contexts["Worker"])
    return leader_worker_set(contexts["Leader"], contexts["Worker"])
