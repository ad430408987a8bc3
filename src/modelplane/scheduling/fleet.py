"""The normalised fleet snapshot: clusters, their pools, and cluster filtering (§3, §4).

Clusters are read once into small immutable views so the phases never touch the
pydantic models again: pools in published order (or derived from classes,
§3.2), device profiles for CEL, readiness, gateway, taints and stack.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from modelplane.api import InferenceClass, InferenceCluster, ModelDeployment, Taint, Toleration
from modelplane.api.inferenceclass import CapacityValue, TypedValue
from modelplane.api.inferencecluster import derived_gpu_pools
from modelplane.api.modeldeployment import EngineMember
from modelplane.cel import DeviceProfile

RANK_VARIABLE = "$(MODELPLANE_RANK)"


@dataclass(frozen=True, slots=True)
class Dev:
    """One device of a pool, normalised (§3.1): counts clamped at 0, claim as a flag."""

    name: str
    dra: bool
    device_class_name: str | None
    count: int
    profile: DeviceProfile


class PoolShape:
    """The devices of a pool, as matching sees them; interned so equal shapes are one object.

    Matching results depend only on (member, shape), so they are cached per shape
    (§5.7): fleets with thousands of identical pools match each member once.
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


_SHAPES: dict[tuple[Dev, ...], PoolShape] = {}
_PROFILES: dict[tuple[Any, ...], DeviceProfile] = {}
_CACHE_LIMIT = 1 << 16


def _shape(devices: tuple[Dev, ...]) -> PoolShape:
    shape = _SHAPES.get(devices)
    if shape is None:
        if len(_SHAPES) > _CACHE_LIMIT:
            _SHAPES.clear()
        shape = _SHAPES[devices] = PoolShape(devices)
    return shape


def _typed(value: TypedValue) -> dict[str, object]:
    # The raw API shape the CEL environment reads (one typed key).
    raw: dict[str, object] = {}
    if value.string_ is not None:
        raw["string"] = value.string_
    if value.version is not None:
        raw["version"] = value.version
    if value.bool_ is not None:
        raw["bool"] = value.bool_
    if value.int_ is not None:
        raw["int"] = value.int_
    return raw


def device_profile(
    driver: str,
    attributes: Mapping[str, TypedValue] | None,
    capacity: Mapping[str, CapacityValue] | None,
) -> DeviceProfile:
    """The CEL device profile of a device, shared between equal devices of the fleet."""
    attrs = attributes or {}
    caps = capacity or {}
    key = (
        driver,
        tuple(sorted((k, v.string_, v.version, v.bool_, v.int_) for k, v in attrs.items())),
        tuple(sorted((k, v.value) for k, v in caps.items())),
    )
    profile = _PROFILES.get(key)
    if profile is None:
        if len(_PROFILES) > _CACHE_LIMIT:
            _PROFILES.clear()
        profile = DeviceProfile.of(
            driver,
            {k: _typed(v) for k, v in attrs.items()},
            {k: {"value": v.value} for k, v in caps.items()},
        )
        _PROFILES[key] = profile
    return profile


@dataclass(frozen=True, slots=True)
class Pool:
    """A pool of a cluster: ``nodes`` identical nodes, each offering ``shape``'s devices."""

    name: str
    nodes: int
    shape: PoolShape


@dataclass(frozen=True)
class ClusterView:
    """What the scheduler reads of one InferenceCluster (api.md §4.1)."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    dynamo: bool
    ready_status: str | None  # status of the Ready condition; None when there is none
    gateway: str
    pools: tuple[Pool, ...] | None  # None: pool-unknown (§3.2)
    pool_map: Mapping[str, Pool] = field(default_factory=dict, compare=False, repr=False)
    shapes: tuple[PoolShape, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.pools:
            object.__setattr__(self, "pool_map", {p.name: p for p in self.pools})
            object.__setattr__(self, "shapes", tuple(p.shape for p in self.pools))

    @property
    def ready(self) -> bool:
        """Some Ready condition has status "True" (§4)."""
        return self.ready_status == "True"

    @property
    def pool_unknown(self) -> bool:
        """The cluster publishes no pools and none could be derived (§3.2)."""
        return self.pools is None

    def pool(self, name: str) -> Pool | None:
        """The published pool of that name."""
        return self.pool_map.get(name)


_SHAPES_BY_RAW: dict[tuple[Any, ...], PoolShape] = {}


def _raw_key(d: Any) -> tuple[Any, ...]:
    attrs = d.attributes
    caps = d.capacity
    return (
        d.name,
        d.claim,
        d.driver,
        d.device_class_name,
        d.count,
        tuple(sorted((k, v.string_, v.version, v.bool_, v.int_) for k, v in attrs.items()))
        if attrs
        else (),
        tuple(sorted((k, v.value) for k, v in caps.items())) if caps else (),
    )


def pool_shape(raw: Iterable[Any]) -> PoolShape:
    """The interned shape of a pool's devices (class or published device models)."""
    # Keyed by the devices' plain values, so equal pools across the fleet skip building profiles.
    devices = list(raw)
    key = tuple(_raw_key(d) for d in devices)
    shape = _SHAPES_BY_RAW.get(key)
    if shape is None:
        if len(_SHAPES_BY_RAW) > _CACHE_LIMIT:
            _SHAPES_BY_RAW.clear()
        shape = _SHAPES_BY_RAW[key] = _shape(
            tuple(
                Dev(
                    name=d.name,
                    dra=d.claim == "DRA",
                    device_class_name=d.device_class_name,
                    count=max(0, d.count),
                    profile=device_profile(d.driver, d.attributes, d.capacity),
                )
                for d in devices
            )
        )
    return shape


def cluster_pools(
    cluster: InferenceCluster, classes: Mapping[str, InferenceClass]
) -> tuple[Pool, ...] | None:
    """Published pools, else pools derived from spec.nodePools and classes (api.md §4.4).

    Returns None for a pool-unknown cluster: nothing published, and nothing
    derivable (no node pools, or some referenced class missing).
    """
    status = cluster.status
    if status is not None and status.gpu_pools:
        return tuple(
            Pool(p.name, max(0, p.nodes), pool_shape(p.devices or ())) for p in status.gpu_pools
        )
    derived = derived_gpu_pools(cluster, classes)
    if derived is None:
        return None
    return tuple(Pool(p.name, max(0, p.nodes), pool_shape(p.devices or ())) for p in derived)


def cluster_view(cluster: InferenceCluster, classes: Mapping[str, InferenceClass]) -> ClusterView:
    """Normalise one cluster."""
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
    )


def fleet(
    clusters: Sequence[InferenceCluster], classes: Sequence[InferenceClass]
) -> tuple[ClusterView, ...]:
    """Every cluster, normalised and sorted by name (§3.1)."""
    by_name = {c.metadata.name or "": c for c in classes}
    views = [cluster_view(c, by_name) for c in clusters]
    views.sort(key=lambda v: v.name)
    return tuple(views)


# ---------------------------------------------------------------------------------------------
# Filtering (§4)


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
    """Whether a toleration tolerates a taint (§4.2)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.operator == "Exists":
        return not toleration.key or toleration.key == taint.key
    return toleration.key == taint.key and (toleration.value or "") == (taint.value or "")


def untolerated_taint(
    cluster: ClusterView, tolerations: Sequence[Toleration], *, no_execute_only: bool = False
) -> Taint | None:
    """The first taint (spec order) no toleration tolerates; NoExecute ones only if asked."""
    for taint in cluster.taints:
        if no_execute_only and taint.effect != "NoExecute":
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def repels(cluster: ClusterView, tolerations: Sequence[Toleration]) -> Taint | None:
    """The taint that keeps new replicas off the cluster, if any (§4.2)."""
    return untolerated_taint(cluster, tolerations)


def evicts(cluster: ClusterView, tolerations: Sequence[Toleration]) -> bool:
    """Whether the cluster drains existing replicas: an untolerated NoExecute taint (§4.2)."""
    return untolerated_taint(cluster, tolerations, no_execute_only=True) is not None


def taint_text(taint: Taint) -> str:
    """``key=value:effect``, ``=value`` left out when the value is empty (§11 row 4)."""
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def rank_engine(deployment: ModelDeployment) -> str | None:
    """The first engine with a Worker that references $(MODELPLANE_RANK) (§4 stack check)."""
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
        if any(RANK_VARIABLE in text for text in texts):
            return True
    return False
