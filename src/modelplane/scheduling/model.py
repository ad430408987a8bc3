"""The scheduler's input markers and result types (docs/scheduling.md, "Inputs, identity and
result").

Everything here is an immutable value: a Schedule can be compared, hashed into
sets by its parts, and printed without touching the API models it came from.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from modelplane.api import InferenceCluster, ModelCache, ModelDeployment, ModelReplica
from modelplane.api.meta import Unresolved

# The cluster list, or UNRESOLVED while it has not been fetched (function runtime only).
Clusters = Sequence[InferenceCluster] | Unresolved


class CacheKind(StrEnum):
    """The state of the ModelCache a deployment references (docs/scheduling.md, "What it does, in
    order").
    """

    NONE = "None"
    PRESENT = "Present"
    ABSENT = "Absent"
    UNRESOLVED = "Unresolved"


@dataclass(frozen=True, slots=True)
class CacheState:
    """A cache state; ``selector`` is the ModelCache's matchLabels when PRESENT.

    ``warm`` names the clusters whose ``status.clusters[]`` entry is Ready: fill prefers
    them among equally loaded clusters (a tie-break only, docs/scheduling.md).
    """

    kind: CacheKind
    selector: tuple[tuple[str, str], ...] = ()
    warm: frozenset[str] = frozenset()

    @staticmethod
    def present(selector: Mapping[str, str] | None = None, warm: Iterable[str] = ()) -> CacheState:
        """PRESENT with the cache's ``spec.clusterSelector.matchLabels`` (None: no constraint)."""
        return CacheState(
            CacheKind.PRESENT, tuple(sorted((selector or {}).items())), frozenset(warm)
        )

    @property
    def gate_open(self) -> bool:
        """Whether fill may place new replicas."""
        return self.kind in (CacheKind.NONE, CacheKind.PRESENT)


CACHE_NONE: Final = CacheState(CacheKind.NONE)
CACHE_ABSENT: Final = CacheState(CacheKind.ABSENT)
CACHE_UNRESOLVED: Final = CacheState(CacheKind.UNRESOLVED)


def namespace_of(meta_namespace: str | None) -> str:
    """A namespaced object's namespace; a missing one means ``default`` (docs/cli.md)."""
    return meta_namespace or "default"


def cache_state(deployment: ModelDeployment, caches: Iterable[ModelCache]) -> CacheState:
    """The state of the referenced cache among ``caches``, a complete list: missing is ABSENT."""
    ref = deployment.spec.template.spec.model_cache_ref
    if ref is None:
        return CACHE_NONE
    namespace = namespace_of(deployment.metadata.namespace)
    for cache in caches:
        if cache.metadata.name == ref.name and namespace_of(cache.metadata.namespace) == namespace:
            selector = cache.spec.cluster_selector
            return CacheState.present(
                selector.match_labels if selector else None, cache.staged_on()
            )
    return CACHE_ABSENT


class Mode(StrEnum):
    """How the schedule was computed."""

    NORMAL = "Normal"
    PARKED = "Parked"
    HELD = "Held"


class HoldCause(StrEnum):
    """Why a schedule is Held."""

    CLUSTERS_UNRESOLVED = "ClustersUnresolved"
    INVALID_NODE_SELECTOR = "InvalidNodeSelector"


@dataclass(frozen=True, slots=True)
class ResolvedRequest:
    """A claimable request a member resolved on its pool (docs/scheduling.md, "Matching, placing and
    packing").
    """

    name: str
    device_class_name: str
    count: int
    selectors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MemberPlacement:
    """One member pinned to a pool; ``pods`` is the pods it charges."""

    role: str
    pool: str
    pods: int
    device_requests: tuple[ResolvedRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class EnginePlacement:
    """One engine of a placement, members in member order."""

    name: str
    members: tuple[MemberPlacement, ...]
    # Why a split across pools is allowed, for --explain ("" when on one pool or unknown).
    split: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class Placement:
    """One replica of the result.

    ``held`` marks a replica kept exactly as observed: it is
    re-emitted with its observed spec, which ``observed`` carries.
    """

    cluster: str
    index: int
    name: str
    retained: bool
    gateway_address: str
    engines: tuple[EnginePlacement, ...]
    held: bool = False
    observed: ModelReplica | None = field(default=None, compare=False, repr=False)
    # Updated in place in this reconcile: its template revision changes now, so it
    # counts not ready and is withdrawn from routing until it is Ready at the new revision.
    revised: bool = False
    # The template revision it is written at (computed once per schedule; "" for a held one).
    revision: str = ""


class Reason(StrEnum):
    """The reason codes, in check order: why a cluster takes no new replica."""

    NO_REPLICAS_DESIRED = "NoReplicasDesired"
    SCHEDULING_HELD = "SchedulingHeld"
    CLUSTER_SELECTOR_MISMATCH = "ClusterSelectorMismatch"
    CACHE_SELECTOR_MISMATCH = "CacheSelectorMismatch"
    CACHE_UNAVAILABLE = "CacheUnavailable"
    TAINTED = "Tainted"
    STACK_UNSUPPORTED = "StackUnsupported"
    STACK_NOT_READY = "StackNotReady"  # status.stack of a Managed stack: installing or failed
    REQUIREMENTS_NOT_MET = "RequirementsNotMet"  # a Provided stack: not met, or not verified yet
    NOT_READY = "NotReady"
    NO_GATEWAY = "NoGateway"
    NO_POOLS = "NoPools"
    NO_MATCHING_POOL = "NoMatchingPool"
    NO_CLAIMABLE_DEVICE = "NoClaimableDevice"
    NO_SHARED_FABRIC = "NoSharedFabric"  # a split's device-claiming members share no fabric
    INSUFFICIENT_CAPACITY = "InsufficientCapacity"
    NOT_SELECTED = "NotSelected"
    NO_NEW_REPLICAS_NEEDED = "NoNewReplicasNeeded"


CAPACITY_REASONS: Final = frozenset(
    {
        Reason.NO_MATCHING_POOL,
        Reason.NO_CLAIMABLE_DEVICE,
        Reason.NO_SHARED_FABRIC,
        Reason.INSUFFICIENT_CAPACITY,
    }
)
"""The reasons about room or devices: the pools' devices do not match, none is claimable, the
pools an engine must split across share no fabric, or no node has room left (docs/scheduling.md, "Why replicas are missing"). A deployment short of every
replica for these reasons
alone reads ``InsufficientCapacity`` (docs/scheduling.md)."""


@dataclass(frozen=True, slots=True)
class ExplainEntry:
    """Why a cluster received no new replica."""

    cluster: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Unfit:
    """A cluster's reason code, with its message built only when asked for.

    Like kube-scheduler's per-node Status: the scheduler records the code of every
    passed-over cluster on every schedule; the text is formatted only by those who
    print it (``schedule --explain``), never by the runtime.
    """

    cluster: str
    reason: Reason
    describe: Callable[[], str] = field(compare=False, repr=False)

    def entry(self) -> ExplainEntry:
        """The explain entry: cluster, reason and the formatted message."""
        return ExplainEntry(self.cluster, self.reason.value, self.describe())


@dataclass(frozen=True, slots=True)
class Shortfall:
    """Why replicas are missing: every candidate cluster counted by the reason it cannot take
    one more replica at the end of the schedule (kube-scheduler's FitError, per cluster).

    ``counts`` is sorted by count (most first), then by reason name; it sums to ``candidates``.
    """

    candidates: int
    counts: tuple[tuple[Reason, int], ...]

    @staticmethod
    def of(reasons: Iterable[Reason], candidates: int) -> Shortfall:
        """Count ``reasons`` (one per candidate cluster)."""
        tally = Counter(reasons)
        return Shortfall(
            candidates, tuple(sorted(tally.items(), key=lambda item: (-item[1], item[0].value)))
        )

    @property
    def reason(self) -> str:
        """The condition reason when nothing was scheduled (docs/reconcile.md, "`ReplicasScheduled`
        when replicas are missing").

        ``InsufficientCapacity`` when every counted reason is about room or devices
        (vacuously so when there is no candidate), otherwise the most frequent code.
        """
        if all(reason in CAPACITY_REASONS for reason, _ in self.counts):
            return Reason.INSUFFICIENT_CAPACITY.value
        return self.counts[0][0].value

    def message(self) -> str:
        """``0/<c> clusters available: <n> <Reason>, ...`` (no list when there is no candidate)."""
        head = f"0/{self.candidates} clusters available"
        if not self.counts:
            return head
        return head + ": " + ", ".join(f"{n} {reason.value}" for reason, n in self.counts)


class LossCause(StrEnum):
    """Why an observed replica's cluster no longer serves it fully, in check order."""

    CLUSTER_GONE = "ClusterGone"  # not in the fetched list: removed, re-placed
    DRAINING = "ClusterDraining"  # an untolerated NoExecute taint: removed, re-placed
    POOLS_LOST = "PoolsLost"  # a pinned pool is no longer published: removed, re-placed
    # Its serving stack is not ready (a transient fault): kept where it is, like NOT_READY.
    STACK_NOT_READY = "StackNotReady"  # a Managed stack installing or failed
    REQUIREMENTS_NOT_MET = "RequirementsNotMet"  # a Provided stack not met or not verified yet
    NOT_READY = "ClusterNotReady"  # kept where it is; withdrawn from routing without a gateway
    NO_GATEWAY = "NoGateway"  # kept, its endpoint withdrawn from routing

    @property
    def removed(self) -> bool:
        """Whether the replicas are removed (and re-placed) rather than kept."""
        return self in (LossCause.CLUSTER_GONE, LossCause.DRAINING, LossCause.POOLS_LOST)


@dataclass(frozen=True, slots=True)
class ReplicaNotice:
    """Observed replicas of one cluster affected by one cause; ``detail`` names the taint,
    the pools or the serving stack's phase (empty otherwise). ``withdrawn``: kept on a
    NotReady or stack-not-ready cluster that has no gateway address either, so its endpoint
    is withdrawn from routing too."""

    cluster: str
    cause: LossCause
    replicas: tuple[str, ...]
    detail: str = ""
    withdrawn: bool = False


class MoveCause(StrEnum):
    """Why a running replica is superseded: it must move, so it is replaced first;
    or it is scaled down, so its endpoint is withdrawn before it goes."""

    NOT_SELECTED = "ClusterNotSelected"  # its cluster no longer matches the selectors
    DRAINING = "ClusterDraining"  # an untolerated NoExecute taint
    POOLS_LOST = "PoolsLost"  # a pinned pool is no longer published
    SHAPE_CHANGED = "ShapeChanged"  # its pins no longer satisfy the engines (or the stack)
    # At an older template revision and replaced rather than updated in place: updating it
    # would leave nothing serving (a single replica), or it is surplus beside its replacement.
    TEMPLATE_CHANGED = "TemplateChanged"
    # The template change touches a field one of its composed objects cannot change in place
    # (composition.inplace): new objects under a new replica name replace it.
    IMMUTABLE_FIELD = "ImmutableFieldChanged"
    SCALED_DOWN = "ScaledDown"  # spec.replicas went down: retiring, never replaced

    @property
    def moves(self) -> bool:
        """Whether the replica is replaced elsewhere (every cause but a scale-down)."""
        return self is not MoveCause.SCALED_DOWN


@dataclass(frozen=True, slots=True)
class Superseded:
    """A Ready replica that must move: it keeps serving until a replacement is Ready.

    ``placement`` re-emits it exactly as observed (held). ``retiring``: enough replacements
    are Ready, so its endpoint is withdrawn now (marked draining) and the replica is removed
    with it once the drain is over. ``replacement`` names the not-yet-Ready replica it waits for ("" when none could
    be placed).
    """

    placement: Placement
    cause: MoveCause
    retiring: bool = False
    replacement: str = ""
    replacement_cluster: str = ""
    replacement_pools: tuple[str, ...] = ()  # the pools the replacement is pinned to, sorted
    detail: str = ""  # what the cause names, e.g. the refused fields of IMMUTABLE_FIELD

    @property
    def pools(self) -> tuple[str, ...]:
        """The pools the superseded replica is pinned to, sorted."""
        return _pools(self.placement)


def _pools(placement: Placement) -> tuple[str, ...]:
    return tuple(sorted({m.pool for e in placement.engines for m in e.members if m.pool}))


@dataclass(frozen=True, slots=True)
class Rollout:
    """Where the template rollout stands after this reconcile.

    ``revision`` is the deployment's template hash; ``updated`` counts the replicas of the
    desired set at it; ``outdated`` names those still at an older revision, ``updating`` those
    updated in place in this reconcile.
    """

    revision: str
    updated: int
    outdated: tuple[str, ...] = ()
    updating: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Schedule:
    """The result of scheduling one deployment.

    Beside the spec's fields it records what the status needs to word the deployment's
    conditions: whether the cluster list was fetched, how many clusters it held,
    the compile error of a held-by-selector schedule, and the counted reasons of a
    shortfall. ``unfit`` holds reason codes; ``explain`` formats their messages.

    ``explained`` is what explain says of each cluster, or a function computing it when
    ``unfit`` is read: at fleet scale one trial per cluster costs more than the placement
    itself, and only a shortfall and ``schedule --explain`` read it.
    """

    mode: Mode
    desired: int
    replicas: tuple[Placement, ...]
    checked: int
    explained: tuple[Unfit, ...] | Callable[[], tuple[Unfit, ...]] = field(
        compare=False, repr=False
    )
    cause: HoldCause | None = None
    clusters_fetched: bool = True
    cluster_count: int = 0
    selector_error: str | None = None
    shortfall: Shortfall | None = None  # Normal mode with fewer replicas than desired
    notices: tuple[ReplicaNotice, ...] = ()  # by cluster name: replicas kept or lost
    # Running replicas that must move, kept serving beside ``replicas``.
    superseded: tuple[Superseded, ...] = ()
    rollout: Rollout | None = None
    # New replicas held back by the surge bound while replicas move: not a shortfall.
    waiting: int = 0

    @property
    def unfit(self) -> tuple[Unfit, ...]:
        """The explain entry of every cluster that received no new replica (reason codes)."""
        explained = self.explained
        return explained if isinstance(explained, tuple) else explained()

    @property
    def total(self) -> int:
        """Replicas in the desired set (docs/reconcile.md, "Conditions, events and readiness")."""
        return len(self.replicas)

    @property
    def explain(self) -> tuple[ExplainEntry, ...]:
        """The explain entries, messages formatted now (only ``schedule --explain`` asks)."""
        return tuple(u.entry() for u in self.unfit)
