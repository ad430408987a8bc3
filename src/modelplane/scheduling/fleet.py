"""The normalised fleet snapshot: clusters, their pools, and cluster filtering (docs/scheduling.md,
"Inputs, identity and result" and "Cluster checks").

Clusters are read once into small immutable views so the phases never touch the
pydantic models again: pools in published order (or derived from classes), device profiles for CEL,
readiness, gateway, taints, stack and the serving stack's published status.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from modelplane.api import InferenceClass, InferenceCluster, ModelDeployment, Taint, Toleration
from modelplane.api.inferenceclass import CapacityValue, TypedValue
from modelplane.api.inferencecluster import (
    ClusterOccupancy,
    Fabric,
    GpuPool,
    PoolDevice,
    StackStatus,
    derived_gpu_pools,
)
from modelplane.api.meta import ObjectVersion, object_version
from modelplane.api.modeldeployment import EngineMember
from modelplane.cel import DeviceProfile
from modelplane.memo import Memo, memoized, same

# Any mention of the rank counts, not only $(MODELPLANE_RANK): a shell's $MODELPLANE_RANK
# or ${MODELPLANE_RANK} on a Dynamo worker reads a variable nobody sets, and is empty.
_RANK_NAME = "MODELPLANE_RANK"


@dataclass(frozen=True, slots=True)
class Dev:
    """One device of a pool, normalised: counts clamped at 0, claim as a flag."""

    name: str
    dra: bool
    device_class_name: str | None
    count: int
    profile: DeviceProfile
    driver: str = ""


class PoolShape:
    """The devices of a pool, as matching sees them; interned so equal shapes are one object.

    Matching results depend only on (member, shape), so they are cached per shape
    (docs/scheduling.md, "Device selectors"): fleets with thousands of identical pools match each
    member once.
    """

    __slots__ = ("devices", "_hash")

    def __init__(self, devices: tuple[Dev, ...]) -> None:
        self.devices = devices
        self._hash = hash(devices)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, PoolShape) and self.devices == other.devices)

    def __repr__(self) -> str:
        return f"PoolShape({[d.name for d in self.devices]})"


@memoized("scheduling.shapes", 1 << 16)
def _shape(devices: tuple[Dev, ...]) -> PoolShape:
    return PoolShape(devices)


# A device's attributes and capacity as plain sorted tuples: the memo keys of its profile.
AttributeKey = tuple[tuple[str, str | None, str | None, bool | None, int | None], ...]
CapacityKey = tuple[tuple[str, str], ...]


def _attribute_key(attributes: Mapping[str, TypedValue] | None) -> AttributeKey:
    if not attributes:
        return ()
    return tuple(sorted((k, v.string_, v.version, v.bool_, v.int_) for k, v in attributes.items()))


def _capacity_key(capacity: Mapping[str, CapacityValue] | None) -> CapacityKey:
    return tuple(sorted((k, v.value) for k, v in capacity.items())) if capacity else ()


def _typed(
    string_: str | None, version: str | None, bool_: bool | None, int_: int | None
) -> dict[str, object]:
    # The raw API shape the CEL environment reads (one typed key).
    raw: dict[str, object] = {}
    if string_ is not None:
        raw["string"] = string_
    if version is not None:
        raw["version"] = version
    if bool_ is not None:
        raw["bool"] = bool_
    if int_ is not None:
        raw["int"] = int_
    return raw


def device_profile(
    driver: str,
    attributes: Mapping[str, TypedValue] | None,
    capacity: Mapping[str, CapacityValue] | None,
) -> DeviceProfile:
    """The CEL device profile of a device, shared between equal devices of the fleet."""
    return _profile(driver, _attribute_key(attributes), _capacity_key(capacity))


@memoized("scheduling.device_profiles", 1 << 16)
def _profile(driver: str, attributes: AttributeKey, capacity: CapacityKey) -> DeviceProfile:
    return DeviceProfile.of(
        driver,
        {k: _typed(s, version, b, i) for k, s, version, b, i in attributes},
        {k: {"value": value} for k, value in capacity},
    )


@dataclass(frozen=True, slots=True)
class PoolFabric:
    """A pool's network fabric as its node pool declares it (docs/scheduling.md, "Splitting an
    engine across pools").

    ``kind`` is ``spec.nodePools[].fabric.type`` (``None`` when the block is absent, the
    schema's default), or ``Unknown`` for a pool no node pool of that name declares (a pool
    only published in ``status.gpuPools``); ``name`` is ``infiniband.fabric``.
    """

    kind: str
    name: str = ""

    @property
    def domain(self) -> str | None:
        """The fabric domain pools share when equal; None when the pool shares none.

        EFA pools share one domain; InfiniBand pools share one when they name the same
        ``infiniband.fabric``. An InfiniBand pool that names none (AKS: its placement group
        is its fabric) shares none with another pool, nor do ``None`` and ``Unknown``.
        """
        if self.kind == "EFA":
            return "EFA"
        if self.kind == "InfiniBand" and self.name:
            return f"InfiniBand {self.name}"
        return None

    def text(self) -> str:
        """How explain names it: ``InfiniBand fabric-1``, ``EFA``, ``fabric None``, ..."""
        if self.kind == "Unknown":
            return "fabric unknown: no spec.nodePools entry"
        if self.kind == "InfiniBand":
            return f"InfiniBand {self.name}" if self.name else "InfiniBand, no fabric named"
        if self.kind == "EFA":
            return "EFA"
        return "fabric None"


UNKNOWN_FABRIC = PoolFabric("Unknown")
NO_FABRIC = PoolFabric("None")


def pool_fabric(fabric: Fabric | None) -> PoolFabric:
    """A node pool's declared fabric (absent: ``None``)."""
    if fabric is None:
        return NO_FABRIC
    return PoolFabric(fabric.type, fabric.infiniband.fabric if fabric.infiniband else "")


@dataclass(frozen=True, slots=True)
class Pool:
    """A pool of a cluster: ``nodes`` identical nodes, each offering ``shape``'s devices."""

    name: str
    nodes: int
    shape: PoolShape
    fabric: PoolFabric = UNKNOWN_FABRIC


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What the scheduler reads of one InferenceCluster (docs/api.md, "InferenceCluster: what is
    read and derived").
    """

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    dynamo: bool
    ready_status: str | None  # status of the Ready condition; None when there is none
    gateway: str
    pools: tuple[Pool, ...] | None  # None: pool-unknown
    # The published status.stack; None when the cluster publishes none (no gating).
    stack_status: StackStatus | None = None
    # The published status.occupancy, read by scheduling.occupancy in the function runtime.
    occupancy: ClusterOccupancy | None = field(default=None, compare=False, repr=False)
    pool_map: Mapping[str, Pool] = field(default_factory=dict, compare=False, repr=False)
    shapes: tuple[PoolShape, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.pools:
            object.__setattr__(self, "pool_map", {p.name: p for p in self.pools})
            object.__setattr__(self, "shapes", tuple(p.shape for p in self.pools))

    @property
    def ready(self) -> bool:
        """Some Ready condition has status "True"."""
        return self.ready_status == "True"

    @property
    def unready_stack(self) -> StackStatus | None:
        """The published ``status.stack`` when it takes no new replica (neither Ready nor
        RequirementsMet); None when it does, or when none is published.

        A cluster that never published ``status.stack`` (and a render input without one, the
        converged view) is not held back.
        """
        stack = self.stack_status
        return stack if stack is not None and not stack.ready else None

    @property
    def pool_unknown(self) -> bool:
        """The cluster publishes no pools and none could be derived."""
        return self.pools is None

    def pool(self, name: str) -> Pool | None:
        """The published pool of that name."""
        return self.pool_map.get(name)


# One device of a pool as plain values: name, claim, driver, class, count, attributes, capacity.
RawDeviceKey = tuple[str, str, str, str | None, int, AttributeKey, CapacityKey]


def _raw_key(d: PoolDevice) -> RawDeviceKey:
    return (
        d.name,
        d.claim,
        d.driver,
        d.device_class_name,
        d.count,
        _attribute_key(d.attributes),
        _capacity_key(d.capacity),
    )


def pool_shape(raw: Iterable[PoolDevice]) -> PoolShape:
    """The interned shape of a pool's devices (class or published device models)."""
    # Keyed by the devices' plain values, so equal pools across the fleet skip building profiles.
    return _pool_shape(tuple(_raw_key(d) for d in raw))


@memoized("scheduling.shapes_by_raw", 1 << 16)
def _pool_shape(devices: tuple[RawDeviceKey, ...]) -> PoolShape:
    return _shape(
        tuple(
            Dev(
                name=name,
                dra=claim == "DRA",
                device_class_name=class_name,
                count=max(0, count),
                profile=_profile(driver, attributes, capacity),
                driver=driver,
            )
            for name, claim, driver, class_name, count, attributes, capacity in devices
        )
    )


def cluster_pools(
    cluster: InferenceCluster, classes: Mapping[str, InferenceClass]
) -> tuple[Pool, ...] | None:
    """Published pools, else pools derived from spec.nodePools and classes.

    Returns None for a pool-unknown cluster: nothing published, and nothing
    derivable (no node pools, or some referenced class missing).
    """
    status = cluster.status
    # A pool's fabric is its node pool's, by name: the InferenceCluster function publishes
    # each node pool under its own name; a pool no node pool declares has an unknown fabric.
    fabrics = {p.name: pool_fabric(p.fabric) for p in cluster.spec.node_pools or ()}
    if status is not None and status.gpu_pools:
        return published_pools(status.gpu_pools, fabrics)
    derived = derived_gpu_pools(cluster, classes)
    if derived is None:
        return None
    return published_pools(derived, fabrics)


def published_pools(
    gpu_pools: Iterable[GpuPool], fabrics: Mapping[str, PoolFabric] | None = None
) -> tuple[Pool, ...]:
    """The pools of ``status.gpuPools`` as the scheduler reads them, with their fabrics."""
    known = fabrics or {}
    return tuple(
        Pool(
            p.name, max(0, p.nodes), pool_shape(p.devices or ()), known.get(p.name, UNKNOWN_FABRIC)
        )
        for p in gpu_pools
    )


def pools_only_view(name: str, gpu_pools: Iterable[GpuPool]) -> ClusterView:
    """A view of a cluster's pools alone: what its occupancy is charged on."""
    return ClusterView(
        name=name,
        labels={},
        taints=(),
        dynamo=False,
        ready_status=None,
        gateway="",
        pools=published_pools(gpu_pools),
    )


# Views of clusters that publish their pools (they depend on the cluster alone), by the
# cluster's name and version: an entry answers only for a cluster equal in content to the
# one it was read from, so an edited cluster is read again even under an unchanged
# version, and an equal cluster decoded from other bytes reuses the view. The version
# keeps the successive versions of one cluster apart while calls in flight read both.
_VIEWS: Memo[ObjectVersion, tuple[InferenceCluster, ClusterView]] = Memo(
    "scheduling.cluster_views", 1 << 14
)


def cluster_view(cluster: InferenceCluster, classes: Mapping[str, InferenceClass]) -> ClusterView:
    """Normalise one cluster (remembered per cluster content when it publishes its pools)."""
    status = cluster.status
    if status is None or not status.gpu_pools:
        return _cluster_view(cluster, classes)  # derived pools depend on the classes too
    key = object_version(cluster.metadata)
    hit = _VIEWS.lookup_valid(key, lambda entry: same(entry[0], cluster))
    if isinstance(hit, tuple):
        return hit[1]
    view = _cluster_view(cluster, classes)
    _VIEWS.put(key, (cluster, view))
    return view


def _cluster_view(cluster: InferenceCluster, classes: Mapping[str, InferenceClass]) -> ClusterView:
    status = cluster.status
    ready_status: str | None = None
    gateway = ""
    if status is not None:
        for condition in status.conditions or ():
            if condition.type == "Ready":
                ready_status = condition.status
                break
        if status.gateway is not None and status.gateway.address:
            gateway = status.gateway.address
    return ClusterView(
        name=cluster.metadata.name or "",
        labels=dict(cluster.metadata.labels or {}),
        taints=tuple(cluster.spec.taints or ()),
        dynamo=cluster.spec.stack == "Dynamo",
        ready_status=ready_status,
        gateway=gateway,
        pools=cluster_pools(cluster, classes),
        stack_status=status.stack if status is not None else None,
        occupancy=status.occupancy if status is not None else None,
    )


def fleet(
    clusters: Sequence[InferenceCluster], classes: Sequence[InferenceClass]
) -> tuple[ClusterView, ...]:
    """Every cluster, normalised and sorted by name."""
    by_name = {c.metadata.name or "": c for c in classes}
    views = [cluster_view(c, by_name) for c in clusters]
    views.sort(key=lambda v: v.name)
    return tuple(views)


# ---------------------------------------------------------------------------------------------
# Filtering


def selector_mismatch(
    labels: Mapping[str, str], want: Mapping[str, str]
) -> tuple[str, str | None, str] | None:
    """The first key (sorted) whose label differs from ``want``: (key, actual or None, wanted)."""
    for key in sorted(want):
        actual = labels.get(key)
        if actual != want[key]:
            return key, actual, want[key]
    return None


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether a toleration tolerates a taint."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.operator == "Exists":
        return not toleration.key or toleration.key == taint.key
    return toleration.key == taint.key and (toleration.value or "") == (taint.value or "")


def untolerated_taint(
    cluster: ClusterView, tolerations: Sequence[Toleration], *, no_execute_only: bool = False
) -> Taint | None:
    """The first taint (spec order) no toleration tolerates; NoExecute ones only if asked.

    Any untolerated taint keeps new replicas off the cluster (``Tainted``).
    """
    for taint in cluster.taints:
        if no_execute_only and taint.effect != "NoExecute":
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def evicts(cluster: ClusterView, tolerations: Sequence[Toleration]) -> bool:
    """Whether the cluster drains existing replicas: an untolerated NoExecute taint."""
    return untolerated_taint(cluster, tolerations, no_execute_only=True) is not None


def taint_text(taint: Taint) -> str:
    """``key=value:effect``, ``=value`` left out when the value is empty (docs/scheduling.md, "Why
    replicas are missing").
    """
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def rank_engine(deployment: ModelDeployment) -> str | None:
    """The first engine with a Worker that references $(MODELPLANE_RANK)."""
    for engine in deployment.spec.template.spec.engines:
        for member in engine.members:
            if member.role == "Worker" and _uses_rank(member):
                return engine.name
    return None


def _uses_rank(member: EngineMember) -> bool:
    spec = member.template.spec
    for container in spec.containers if spec is not None else ():
        texts = [*(container.command or ()), *(container.args or ())]
        texts += [e.value for e in container.env or () if e.value is not None]
        if any(_RANK_NAME in text for text in texts):
            return True
    return False
