"""What composing one member's pods needs to know: the member, its engine and where it runs."""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.api import ReplicaEngine, ReplicaMember
from modelplane.api.pod import ReplicaContainer
from modelplane.composition.names import ReplicaNames
from modelplane.composition.types import Stack, WorkloadKind

ENGINE_CONTAINER = "engine"
DEFAULT_HTTP_PORT = 8000


def is_serving(member: ReplicaMember) -> bool:
    """A Standalone or Leader serves traffic; Workers never do (docs/composition.md, "Objects, in
    order").
    """
    return member.role != "Worker"


def is_gang(engine: ReplicaEngine) -> bool:
    """A Leader + Worker engine (anything but a single Standalone)."""
    return any(m.role != "Standalone" for m in engine.members)


def serving_member(engine: ReplicaEngine) -> ReplicaMember | None:
    """The engine's Standalone or Leader (validation guarantees there is one)."""
    return next((m for m in engine.members if is_serving(m)), None)


def worker_nodes(member: ReplicaMember) -> int:
    """Worker pods per gang; a Worker without a ``worker`` block spans one node."""
    return member.worker.nodes if member.worker is not None else 1


def containers_of(member: ReplicaMember) -> list[ReplicaContainer]:
    """The member's containers in the user's order (none when template.spec is absent)."""
    spec = member.template.spec
    return list(spec.containers) if spec is not None else []


def engine_container(member: ReplicaMember) -> ReplicaContainer | None:
    """The member's container named ``engine``."""
    return next((c for c in containers_of(member) if c.name == ENGINE_CONTAINER), None)


def http_port(container: ReplicaContainer | None) -> int | None:
    """The containerPort of the container's port named ``http``, if it declares one."""
    if container is None:
        return None
    return next((p.container_port for p in container.ports or [] if p.name == "http"), None)


def serving_port(engine: ReplicaEngine) -> int:
    """``P``: the http port of the engine container of the engine's serving member
    (docs/composition.md, "Pods").
    """
    member = serving_member(engine)
    port = http_port(engine_container(member)) if member is not None else None
    return port if port is not None else DEFAULT_HTTP_PORT


def workload_kind(engine: ReplicaEngine, stack: Stack) -> WorkloadKind:
    """The workload of an engine: Deployment, LeaderWorkerSet or PodCliqueSet."""
    if not is_gang(engine):
        return "Deployment"
    return "PodCliqueSet" if stack == "Dynamo" else "LeaderWorkerSet"


@dataclass(frozen=True, slots=True)
class MemberContext:
    """One member of one engine of a replica, as its pods are composed."""

    names: ReplicaNames
    engine: ReplicaEngine
    member: ReplicaMember
    stack: Stack
    cache_pvc: str | None
    # The DRA drivers known of the member's pool (composition/taints.py): what it tolerates.
    pool_drivers: frozenset[str] = frozenset()

    @property
    def kind(self) -> WorkloadKind:
        """The workload kind carrying this member's pods."""
        return workload_kind(self.engine, self.stack)

    @property
    def serving(self) -> bool:
        """Whether this member's pods serve traffic."""
        return is_serving(self.member)

    @property
    def claims(self) -> bool:
        """Whether this member's pods claim devices through a ResourceClaimTemplate."""
        return bool(self.member.device_requests)

    @property
    def dynamo_gang(self) -> bool:
        """Pods of a Grove PodCliqueSet (scheduled by KAI)."""
        return self.kind == "PodCliqueSet"
