"""The fleet scheduler: retain, scale down, fill; holding; explain (docs/scheduling.md, "What it
does, in order"; docs/scheduling.md, "Why replicas are missing").

``schedule`` is a pure function of its inputs: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from modelplane.api import InferenceClass, ModelCache, ModelDeployment, ModelReplica, Toleration
from modelplane.api.meta import UNRESOLVED
from modelplane.cel import check_selector
from modelplane.composition.inplace import replacement_reasons
from modelplane.composition.namespaces import desired_remote_namespace, remote_namespace
from modelplane.composition.types import Stack
from modelplane.naming import DEPLOYMENT_LABEL, replica_name
from modelplane.scheduling.capacity import Ledger, pods_of
from modelplane.scheduling.explain import (
    Gates,
    blocker,
    explain_cluster,
    new_replica_failure,
    selector_failure,
)
from modelplane.scheduling.fleet import ClusterView, Pool, evicts, fleet, rank_engine
from modelplane.scheduling.matching import match
from modelplane.scheduling.model import (
    CacheState,
    Clusters,
    EnginePlacement,
    HoldCause,
    MemberPlacement,
    Mode,
    MoveCause,
    Placement,
    Reason,
    ResolvedRequest,
    Rollout,
    Schedule,
    Shortfall,
    Superseded,
    Unfit,
    cache_state,
    namespace_of,
)
from modelplane.scheduling.notices import replica_notices
from modelplane.scheduling.occupancy import OccupancySource, bases, occupancy_of, unlisted
from modelplane.scheduling.placement import (
    EngineSpec,
    Failure,
    Trial,
    engine_specs,
    member_placement,
    place_replica,
    split_verdict,
)
from modelplane.scheduling.replicas import (
    identity,
    owns,
    replica_object,
    sort_key,
)
from modelplane.scheduling.rollout import (
    MAX_SURGE,
    MAX_UNAVAILABLE,
    ready,
    revision,
    revision_of,
    settled,
)


def schedule(
    deployment: ModelDeployment,
    clusters: Clusters,
    classes: Sequence[InferenceClass],
    cache: CacheState,
    observed_replicas: Iterable[ModelReplica],
    occupancy: OccupancySource = None,
) -> Schedule:
    """Place one deployment's replicas on the fleet (docs/scheduling.md, "Inputs, identity and
    result").

    ``occupancy`` says what the clusters hold already (scheduling.occupancy): None
    computes it from ``observed_replicas`` (every namespace's), else ``observed_replicas``
    need only be the deployment's own.
    """
    desired = deployment.spec.replicas
    observed = list(observed_replicas)
    # Ours in (namespace, name) order; the rest need none (each cluster's occupancy sorts
    # its own replicas).
    ours = sorted(owned(deployment, observed), key=sort_key)
    if desired == 0:
        return _parked(deployment, clusters, ours)
    if clusters is UNRESOLVED or (not clusters and any(r.spec.cluster_name for r in ours)):
        fetched = clusters is not UNRESOLVED
        return _held(deployment, ours, {}, HoldCause.CLUSTERS_UNRESOLVED, fetched=fetched)
    views = fleet(clusters, classes)
    error = first_compile_error(deployment)
    if error is not None:
        return _held(
            deployment,
            ours,
            {v.name: v for v in views},
            HoldCause.INVALID_NODE_SELECTOR,
            error=error,
        )
    return _Run(deployment, views, cache, observed, ours, occupancy).schedule()


def owned(deployment: ModelDeployment, replicas: Iterable[ModelReplica]) -> list[ModelReplica]:
    """The replicas a deployment owns, in the given order."""
    name = deployment.metadata.name
    namespace = namespace_of(deployment.metadata.namespace)
    return [
        r
        for r in replicas
        if r.metadata.labels is not None
        and r.metadata.labels.get(DEPLOYMENT_LABEL) == name
        and (r.metadata.namespace or "default") == namespace
    ]


def first_compile_error(deployment: ModelDeployment) -> str | None:
    """The compile error of the first selector (deployment order) that fails, if any
    (docs/scheduling.md, "Device selectors").
    """
    for engine in deployment.spec.template.spec.engines:
        for member in engine.members:
            for request in member.node_selector.devices if member.node_selector else ():
                for selector in request.selectors:
                    if selector.cel:
                        error = check_selector(selector.cel)
                        if error is not None:
                            return error
    return None


def _parked(deployment: ModelDeployment, clusters: Clusters, ours: list[ModelReplica]) -> Schedule:
    """Nothing placed or kept; Ready replicas retire as in a scale-down (their endpoints
    drain before they go)."""
    names = sorted(c.metadata.name or "" for c in clusters) if clusters is not UNRESOLVED else []
    retiring = tuple(
        Superseded(held_placement(deployment, r, ""), MoveCause.SCALED_DOWN, retiring=True)
        for r in ours
        if ready(r)
    )
    return Schedule(
        mode=Mode.PARKED,
        desired=0,
        replicas=(),
        superseded=retiring,
        checked=0,
        explained=tuple(Unfit(n, Reason.NO_REPLICAS_DESIRED, _parked_message) for n in names),
        clusters_fetched=clusters is not UNRESOLVED,
        cluster_count=len(names),
    )


def _parked_message() -> str:
    return "spec.replicas is 0"


def _held(
    deployment: ModelDeployment,
    ours: Sequence[ModelReplica],
    views: dict[str, ClusterView],
    cause: HoldCause,
    *,
    fetched: bool = True,
    error: str | None = None,
) -> Schedule:
    """Keep what was observed: de-duplicate, scale down, no fill."""
    seen: set[tuple[str, int]] = set()
    kept: list[Placement] = []
    for replica in ours:
        key = identity(replica)
        if key in seen:
            continue
        seen.add(key)
        view = views.get(key[0])
        kept.append(held_placement(deployment, replica, view.gateway if view else ""))
    kept = scale_down(kept, deployment.spec.replicas)
    current = revision(deployment)
    # Nothing is updated while held: the rollout waits where it stands.
    outdated = sorted(p.name for p in kept if revision_of(_observed(p), current) != current)
    rollout = Rollout(current, len(kept) - len(outdated), tuple(outdated))
    unfit: tuple[Unfit, ...] = ()
    checked = 0
    if cause is HoldCause.INVALID_NODE_SELECTOR:

        def message() -> str:
            return f"Invalid nodeSelector CEL expression: {error}; existing replicas are kept"

        unfit = tuple(Unfit(name, Reason.SCHEDULING_HELD, message) for name in sorted(views))
        want = _selector(deployment)
        checked = sum(
            1 for v in views.values() if all(v.labels.get(k) == w for k, w in want.items())
        )
    return Schedule(
        mode=Mode.HELD,
        desired=deployment.spec.replicas,
        replicas=tuple(sorted(kept, key=lambda p: (p.cluster, p.index))),
        checked=checked,
        explained=unfit,
        cause=cause,
        clusters_fetched=fetched,
        cluster_count=len(views),
        selector_error=error,
        rollout=rollout,
        # Held replicas are kept whatever their cluster's state; NotReady or gatewayless
        # clusters are still said. Nothing is removed while held.
        notices=tuple(
            n
            for n in replica_notices(
                ours, views, deployment.spec.template.spec.tolerations or [], kept
            )
            if not n.cause.removed
        )
        if views
        else (),
    )


def held_placement(deployment: ModelDeployment, replica: ModelReplica, gateway: str) -> Placement:
    """A replica kept exactly as observed: pools and requests read from its spec."""
    cluster, index = identity(replica)
    engines = tuple(
        EnginePlacement(
            engine.name,
            tuple(
                MemberPlacement(
                    role=m.role,
                    pool=m.node_pool_name,
                    pods=(
                        pods_of(m.role, m.worker.nodes if m.worker else None) * engine.copies
                        if m.device_requests
                        else 0
                    ),
                    device_requests=tuple(
                        ResolvedRequest(
                            r.name,
                            r.device_class_name,
                            r.count,
                            tuple(s.cel for s in r.selectors or () if s.cel),
                        )
                        for r in m.device_requests or ()
                    ),
                )
                for m in engine.members
            ),
        )
        for engine in replica.spec.engines
    )
    return Placement(
        cluster=cluster,
        index=index,
        name=replica_name(deployment.metadata.name or "", cluster, index),
        retained=True,
        gateway_address=gateway,
        engines=engines,
        held=True,
        observed=replica,
    )


def scale_down(kept: list[Placement], desired: int) -> list[Placement]:
    """Remove the largest (load, cluster, index) until ``desired`` remain."""
    kept = list(kept)
    while len(kept) > desired:
        load = Counter(p.cluster for p in kept)
        victim = max(kept, key=lambda p: (load[p.cluster], p.cluster, p.index))
        kept.remove(victim)
    return kept


def _selector(deployment: ModelDeployment) -> dict[str, str]:
    selector = deployment.spec.template.spec.cluster_selector
    return dict(selector.match_labels or {}) if selector else {}


class _Run:
    """One normal-mode schedule: candidates, retain, scale down, ledger, fill, explain."""

    def __init__(
        self,
        deployment: ModelDeployment,
        views: tuple[ClusterView, ...],
        cache: CacheState,
        observed: list[ModelReplica],
        ours: list[ModelReplica],
        occupancy: OccupancySource = None,
    ) -> None:
        self.deployment = deployment
        self.views = views
        self.cache = cache
        self.observed = observed
        self.ours = ours
        # What the clusters hold already: their occupancy, computed or published.
        self.bases = bases(occupancy, views, observed)
        spec = deployment.spec.template.spec
        self.gates = Gates(
            selector=_selector(deployment),
            cache=cache,
            cache_name=spec.model_cache_ref.name if spec.model_cache_ref else "",
            tolerations=spec.tolerations or [],
            rank_engine=rank_engine(deployment),
            unpublished=self.bases.unpublished,
        )
        self.engines: tuple[EngineSpec, ...] = engine_specs(deployment)
        self.candidates = {v.name: v for v in views if selector_failure(self.gates, v) is None}
        self.by_name = {v.name: v for v in views}
        self.revision = revision(deployment)
        self.trials: dict[str, Trial | Failure] = {}
        # Replaced because their objects refuse the change in place: why, by replica name.
        self.refused: dict[str, str] = {}
        # Identities of replicas dropped for such a change: not reused in this reconcile, so
        # their replacement never rewrites their objects under the same names.
        self.reserved: set[tuple[str, int]] = set()

    def schedule(self) -> Schedule:
        desired = self.deployment.spec.replicas
        retained, moving = self._retain()
        kept = self._scale_down(retained, desired, moving)
        self._surge_update(kept, moving, desired)
        superseded = self._superseded(kept, moving, desired) + self._scaled_down(
            retained, kept, moving
        )
        holding = [*kept, *(s.placement for s in superseded)]
        # Each cluster starts from its occupancy, which charges every replica on it, ours
        # included: a superseded one stays charged while it runs, and one being
        # dropped or scaled down until its cluster no longer counts it. Ours the occupancy
        # does not list yet are charged on top, in (namespace, name) order
        # (docs/scheduling.md "Occupancy").
        self.ledger = Ledger.build(list(self.candidates.values()), self.bases.occupancy)
        for replica in unlisted(self.ours, self.bases.occupancy):
            view = self.candidates.get(replica.spec.cluster_name)
            if view is None or view.pool_unknown or not replica.spec.engines:
                continue
            self.ledger.charge_observed(replica, view)
        new: list[Placement] = []
        # Surge: while replicas move, at most MAX_SURGE beyond spec.replicas exist at once.
        room = max(0, desired + MAX_SURGE - len(holding))
        needed = min(desired - len(kept), room)
        if needed > 0 and self.cache.gate_open:
            new = self._fill(kept, needed, holding)
        # Held back by the surge bound only when everything allowed was placed.
        held_back = desired - len(kept) - needed if len(new) == needed else 0
        new_clusters = sorted({p.cluster for p in new})
        placed = len(kept)

        # Judged on first read, against the final ledger: nothing below changes it.
        def explained() -> tuple[Unfit, ...]:
            return tuple(
                explain_cluster(self.gates, v, self._trial, new_clusters, placed, desired)
                for v in self.views
                if v.name not in new_clusters
            )

        moves = _paired(superseded, [*kept, *new])
        kept, rollout = self._roll(kept, new, moves, desired)
        # Retained placements carry their observed replica only to be told apart above.
        replicas = [p if p.held else _detach(p) for p in kept] + new
        total = len(replicas)
        short = total + held_back < desired
        # A shortfall counts every candidate's reason: then the entries are judged now, once.
        entries = explained() if short else explained
        return Schedule(
            mode=Mode.NORMAL,
            desired=desired,
            replicas=tuple(sorted(replicas, key=lambda p: (p.cluster, p.index))),
            checked=len(self.candidates),
            explained=entries,
            cluster_count=len(self.views),
            shortfall=self._shortfall(entries) if isinstance(entries, tuple) else None,
            notices=replica_notices(
                self.ours, {v.name: v for v in self.views}, self.gates.tolerations, kept
            ),
            superseded=moves,
            rollout=rollout,
            waiting=held_back,
        )

    def _superseded(
        self, kept: list[Placement], moving: list[tuple[ModelReplica, MoveCause]], desired: int
    ) -> list[Superseded]:
        """Ready replicas that must move, kept while kept Ready replicas fall short.

        Each one covers a missing Ready replica of the desired set; the others retire (their
        endpoint is withdrawn, then they go). Never more kept than ``desired`` needs.
        """
        serving = sum(1 for p in kept if ready(p.observed))
        covering = max(0, desired - serving)
        out: list[Superseded] = []
        for i, (replica, cause) in enumerate(moving):
            view = self.by_name.get(replica.spec.cluster_name)
            placement = held_placement(self.deployment, replica, view.gateway if view else "")
            detail = self.refused.get(replica.metadata.name or "", "")
            out.append(Superseded(placement, cause, retiring=i >= covering, detail=detail))
        return out

    @staticmethod
    def _moved(p: Placement, moving: list[tuple[ModelReplica, MoveCause]]) -> bool:
        return any(replica is p.observed for replica, _ in moving)

    def _outdated(self, p: Placement) -> bool:
        return revision_of(_observed(p), self.revision) != self.revision

    def _scale_down(
        self, retained: list[Placement], desired: int, moving: list[tuple[ModelReplica, MoveCause]]
    ) -> list[Placement]:
        """Scale down, taking replicas at an older template revision first.

        A Ready one taken so is replaced, not dropped: it joins ``moving`` and serves until the
        replica at the current revision beside it is Ready (a surge update).
        """
        if all(not self._outdated(p) for p in retained):
            return scale_down(retained, desired)  # the spec's order, unchanged
        current = [p for p in retained if not self._outdated(p)]
        old = [p for p in retained if self._outdated(p)]
        keep_old = scale_down(old, max(0, desired - len(current)))
        staying = {id(p) for p in keep_old}
        for p in old:
            if id(p) not in staying and ready(p.observed) and not p.held:
                moving.append((_observed(p), MoveCause.TEMPLATE_CHANGED))
        survivors = {id(p) for p in scale_down(current, desired)} | staying
        return [p for p in retained if id(p) in survivors]  # in walk order, as retained

    def _surge_update(
        self, kept: list[Placement], moving: list[tuple[ModelReplica, MoveCause]], desired: int
    ) -> None:
        """Replace a lone outdated Ready replica instead of updating it in place.

        When ``desired - MAX_UNAVAILABLE`` is below one, an in-place update would take the
        deployment from Ready to nothing; the replica is superseded instead, so fill places its
        replacement at the current revision beside it (within ``MAX_SURGE``).
        """
        if desired - MAX_UNAVAILABLE >= 1 or moving or len(kept) != 1:
            return
        (p,) = kept
        if self._outdated(p) and ready(p.observed) and not p.held:
            kept.remove(p)
            moving.append((_observed(p), MoveCause.TEMPLATE_CHANGED))

    def _scaled_down(
        self,
        retained: list[Placement],
        kept: list[Placement],
        moving: list[tuple[ModelReplica, MoveCause]],
    ) -> list[Superseded]:
        """Ready replicas removed by a scale-down retire like replaced ones: their
        endpoint is withdrawn first, the replica goes once it is no longer observed."""
        staying = {id(p) for p in kept} | {id(p) for p in retained if self._moved(p, moving)}
        return [
            Superseded(
                held_placement(self.deployment, _observed(p), p.gateway_address),
                MoveCause.SCALED_DOWN,
                retiring=True,
            )
            for p in retained
            if id(p) not in staying and ready(p.observed)
        ]

    def _roll(
        self,
        kept: list[Placement],
        new: list[Placement],
        superseded: Sequence[Superseded],
        desired: int,
    ) -> tuple[list[Placement], Rollout]:
        """Apply a template change to kept replicas in place, a few at a time.

        A kept replica at an older revision is re-emitted as observed until its turn. A turn
        comes only when every replica at the current revision is Ready and applied (new ones
        included; a refused change holds the rollout), no
        move is in flight, and taking one more out of service leaves at least
        ``max(1, desired - MAX_UNAVAILABLE)`` serving; a replica that is not Ready anyway is
        taken first, at no cost.
        """
        outdated = {id(p) for p in kept if self._outdated(p)}
        # A move in flight (a replacement placed, or a replaced replica leaving) goes first:
        # an update now would make the leaving replica cover again (docs/reconcile.md).
        moving = any(s.retiring or s.replacement for s in superseded)
        waiting = (
            bool(new)
            or moving
            or any(not settled(p.observed) for p in kept if id(p) not in outdated)
        )
        # A replica kept exactly as observed (its cluster's pools unknown) waits for them.
        eligible = [p for p in kept if id(p) in outdated and not p.held]
        chosen: list[Placement] = []
        if eligible and not waiting:
            serving = sum(1 for p in kept if ready(p.observed)) + sum(
                1 for s in superseded if not s.retiring
            )
            # Never down to nothing: a lone replica is replaced by surge (_surge_update).
            budget = serving - max(1, desired - MAX_UNAVAILABLE)
            for p in sorted(eligible, key=lambda p: (ready(p.observed), p.cluster, p.index)):
                if len(chosen) >= MAX_UNAVAILABLE:
                    break
                if ready(p.observed):
                    if budget <= 0:
                        break
                    budget -= 1
                chosen.append(p)
        picked = {id(p) for p in chosen}
        out: list[Placement] = []
        for p in kept:
            if id(p) in picked:
                out.append(replace(p, revised=True))
            elif id(p) in outdated and not p.held:
                # Not its turn: it keeps running its revision, re-emitted as observed.
                out.append(held_placement(self.deployment, _observed(p), p.gateway_address))
            else:
                out.append(p)
        left = [p.name for p in kept if id(p) in outdated and id(p) not in picked]
        rollout = Rollout(
            revision=self.revision,
            updated=len(kept) + len(new) - len(left),
            outdated=tuple(sorted(left)),
            updating=tuple(sorted(p.name for p in chosen)),
        )
        return out, rollout

    def _shortfall(self, unfit: Sequence[Unfit]) -> Shortfall:
        """Every candidate counted by why it cannot take one more replica now (docs/reconcile.md,
        "`ReplicasScheduled` when replicas are missing").

        A candidate that received new replicas has no explain entry; it is counted by its
        trial against the final ledger, which fails once it is full (InsufficientCapacity).
        """
        reasons = {u.cluster: u.reason for u in unfit if u.cluster in self.candidates}
        for name, view in self.candidates.items():
            if name not in reasons:
                entry = blocker(self.gates, view, self._trial)
                if entry is not None:
                    reasons[name] = entry.reason
        return Shortfall.of(reasons.values(), len(self.candidates))

    def _retain(self) -> tuple[list[Placement], list[tuple[ModelReplica, MoveCause]]]:
        """Walk our observed replicas in (namespace, name) order; keep those that pass.

        A Ready replica that fails for a reason other than its cluster being gone must move:
        it is returned with the cause, to keep serving until it is replaced. One
        that is not Ready serves nothing and is dropped as before.
        """
        kept: list[Placement] = []
        moving: list[tuple[ModelReplica, MoveCause]] = []
        held: set[tuple[str, int]] = set()
        tolerations = self.gates.tolerations
        for replica in self.ours:
            cluster, index = identity(replica)
            if not cluster or cluster not in self.by_name or (cluster, index) in held:
                continue  # never pinned, gone, or a duplicate identity: nothing can be kept
            view = self.candidates.get(cluster)
            judged = self._judge(replica, view, tolerations)
            if isinstance(judged, MoveCause):
                if ready(replica):
                    moving.append((replica, judged))
                    held.add((cluster, index))
                elif revision_of(replica, self.revision) != self.revision:
                    # Dropped while the template changed: a replacement under its name
                    # would rewrite its objects in place, claim templates included, which
                    # a cluster refuses. Its name stays out of this reconcile's fill.
                    self.reserved.add((cluster, index))
                continue
            assert view is not None
            if judged is None:
                kept.append(held_placement(self.deployment, replica, view.gateway))
            else:
                placement = Placement(
                    cluster=cluster,
                    index=index,
                    name=replica_name(self.deployment.metadata.name or "", cluster, index),
                    retained=True,
                    gateway_address=view.gateway,
                    engines=judged,
                    observed=replica,
                    revision=self.revision,
                )
                refused = self._refused(placement, view)
                if refused:
                    # Its objects cannot take the change: replaced under a new name.
                    held.add((cluster, index))
                    if ready(replica):
                        self.refused[replica.metadata.name or ""] = refused
                        moving.append((replica, MoveCause.IMMUTABLE_FIELD))
                    else:
                        self.reserved.add((cluster, index))
                    continue
                kept.append(placement)
            held.add((cluster, index))
        return kept, moving

    def _refused(self, placement: Placement, view: ClusterView) -> str:
        """What the replica's cluster would refuse if the replica were updated in place to
        the current template ("" when every composed object takes the change, or it is
        current already)."""
        observed = _observed(placement)
        moves = remote_namespace(observed) != desired_remote_namespace(observed)
        if not moves and not self._outdated(placement):
            return ""
        desired = replica_object(self.deployment, placement)
        stack: Stack = "Dynamo" if view.dynamo else "Standard"
        reasons = replacement_reasons(observed, desired, stack)
        return ", ".join(dict.fromkeys(str(r) for r in reasons))

    def _judge(
        self, replica: ModelReplica, view: ClusterView | None, tolerations: Sequence[Toleration]
    ) -> MoveCause | tuple[EnginePlacement, ...] | None:
        """An observed replica on an existing cluster: why it must move, or its re-resolved
        engines, or None to keep it exactly as observed (its cluster's pools are unknown)."""
        if view is None:
            return MoveCause.NOT_SELECTED
        if evicts(view, tolerations):
            return MoveCause.DRAINING
        if view.pool_unknown:
            return None  # kept exactly as observed
        if view.dynamo and self.gates.rank_engine is not None:
            return MoveCause.SHAPE_CHANGED  # re-placed like a changed shape
        engines = self._reresolve(replica, view)
        if engines is not None:
            return engines
        pinned = {m.node_pool_name for e in replica.spec.engines for m in e.members}
        if any(name and view.pool(name) is None for name in pinned):
            return MoveCause.POOLS_LOST
        return MoveCause.SHAPE_CHANGED

    def _reresolve(
        self, replica: ModelReplica, view: ClusterView
    ) -> tuple[EnginePlacement, ...] | None:
        """Re-check an observed replica's pins against the current deployment."""
        observed = {e.name: e for e in replica.spec.engines}
        if len(replica.spec.engines) != len(self.engines) or set(observed) != {
            e.name for e in self.engines
        }:
            return None
        placed: list[EnginePlacement] = []
        for engine in self.engines:
            stamped = observed[engine.name]
            if len(stamped.members) != len(engine.members):
                return None
            members: list[MemberPlacement] = []
            pools: list[Pool] = []
            for member, pinned in zip(engine.members, stamped.members, strict=True):
                if pinned.role != member.role:
                    return None
                pool = view.pool(pinned.node_pool_name) if pinned.node_pool_name else None
                if pool is None:
                    return None
                result = match(member.requests, pool.shape)
                if not result.ok:
                    return None
                members.append(member_placement(member, pool.name, result))
                pools.append(pool)
            if not any(m.device_requests for m in members):
                return None
            # A split whose claiming members no longer share a fabric (the pools' fabrics
            # changed, or it predates the rule) is re-placed like a changed shape.
            allowed, note = split_verdict(members, pools)
            if not allowed:
                return None
            placed.append(EnginePlacement(engine.name, tuple(members), note))
        return tuple(placed)

    def _trial(self, view: ClusterView) -> Trial | Failure:
        """Placing one more replica on a cluster against the current ledger, memoised.

        A cluster's ledger state changes only when it is chosen, and then its entry
        is replaced, so a memoised outcome is always the current one.
        """
        outcome = self.trials.get(view.name)
        if outcome is None:
            outcome = place_replica(self.engines, view, self.ledger.trial(view.name))
            self.trials[view.name] = outcome
        return outcome

    def _fill(
        self, kept: list[Placement], needed: int, holding: list[Placement]
    ) -> list[Placement]:
        """Place new replicas: fewest of ours first, then cluster name, lowest free index.

        ``holding`` (kept and superseded replicas) hold their identities: a replacement on the
        same cluster takes a new index, so it never replaces the replica it stands in for.
        """
        load: Counter[str] = Counter(p.cluster for p in kept)
        used: defaultdict[str, set[int]] = defaultdict(set)
        for p in holding:
            used[p.cluster].add(p.index)
        for cluster, index in self.reserved:
            used[cluster].add(index)
        eligible = {
            name: v
            for name, v in self.candidates.items()
            if new_replica_failure(self.gates, v) is None
        }
        # Only the chosen cluster's ledger changes in a round, so every other cluster's trial
        # stays valid: a heap over (load, cold, name) of the clusters whose trial succeeds is
        # exact. ``cold`` (0 where the cache is already staged) only breaks ties in load, and
        # which clusters can host a replica does not depend on the order: the count placed is
        # the same with or without it (docs/scheduling.md).
        warm = self.cache.warm
        heap = [
            (load[name], name not in warm, name)
            for name, v in eligible.items()
            if isinstance(self._trial(v), Trial)
        ]
        heapq.heapify(heap)
        new: list[Placement] = []
        name_of = self.deployment.metadata.name or ""
        while len(new) < needed and heap:
            _, _, cluster = heapq.heappop(heap)
            view = eligible[cluster]
            trial = self._trial(view)
            assert isinstance(trial, Trial)
            index = next(i for i in range(len(used[cluster]) + 1) if i not in used[cluster])
            new.append(
                Placement(
                    cluster=cluster,
                    index=index,
                    name=replica_name(name_of, cluster, index),
                    retained=False,
                    gateway_address=view.gateway,
                    engines=trial.engines,
                    revision=self.revision,
                )
            )
            self.ledger.commit(cluster, trial.state)
            load[cluster] += 1
            used[cluster].add(index)
            del self.trials[cluster]
            if isinstance(self._trial(view), Trial):
                heapq.heappush(heap, (load[cluster], cluster not in warm, cluster))
        return new


def _detach(placement: Placement) -> Placement:
    return replace(placement, observed=None)


def _observed(placement: Placement) -> ModelReplica:
    assert placement.observed is not None  # a kept placement carries its observed replica
    return placement.observed


def _paired(
    superseded: Sequence[Superseded], replicas: Sequence[Placement]
) -> tuple[Superseded, ...]:
    """Each superseded replica still covering for one, paired with a replica not yet Ready.

    The replacements are the desired set's replicas that are not Ready (placed now, or
    placed earlier and still loading), in (cluster, index) order; a move waits for one of them.
    """
    waiting = sorted(
        (p for p in replicas if not p.retained or not ready(p.observed)),
        key=lambda p: (p.cluster, p.index),
    )
    out: list[Superseded] = []
    for s in superseded:
        if not s.retiring and waiting:
            p = waiting.pop(0)
            pools = tuple(sorted({m.pool for e in p.engines for m in e.members if m.pool}))
            s = replace(
                s, replacement=p.name, replacement_cluster=p.cluster, replacement_pools=pools
            )
        out.append(s)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Scheduled:
    """One deployment of a multi-deployment run: its cache state, schedule and replicas."""

    deployment: ModelDeployment
    cache: CacheState
    schedule: Schedule
    replicas: tuple[ModelReplica, ...]


def deployment_key(deployment: ModelDeployment) -> tuple[str, str]:
    """Deployments are scheduled in (namespace, name) order."""
    return namespace_of(deployment.metadata.namespace), deployment.metadata.name or ""


def schedule_all(
    deployments: Iterable[ModelDeployment],
    clusters: Clusters,
    classes: Sequence[InferenceClass],
    caches: Sequence[ModelCache],
    observed_replicas: Iterable[ModelReplica],
) -> list[Scheduled]:
    """Schedule several deployments in (namespace, name) order, each seeing the earlier ones'.

    An earlier deployment's own observed replicas are replaced by the ModelReplicas
    it was given, so later deployments' ledgers charge exactly those: the occupancy of
    every cluster either touches is recomputed from the current list before the next
    deployment (scheduling.occupancy). Caches are resolved as in a local run: a
    referenced cache missing from ``caches`` is ABSENT.
    """
    observed = list(observed_replicas)
    views = {v.name: v for v in fleet(clusters, classes)} if clusters is not UNRESOLVED else {}
    pinned: defaultdict[str, list[ModelReplica]] = defaultdict(list)
    for replica in observed:
        pinned[replica.spec.cluster_name].append(replica)
    current = {name: occupancy_of(view, pinned[name]) for name, view in views.items()}
    results: list[Scheduled] = []
    for deployment in sorted(deployments, key=deployment_key):
        cache = cache_state(deployment, caches)
        result = schedule(deployment, clusters, classes, cache, observed, current)
        given = tuple(replica_object(deployment, p) for p in result.replicas)
        # Superseded replicas still run: later deployments see them charged.
        moving = tuple(replica_object(deployment, s.placement) for s in result.superseded)
        dropped: list[ModelReplica] = []
        others: list[ModelReplica] = []
        for replica in observed:
            (dropped if owns(deployment, replica) else others).append(replica)
        observed = others + [*given, *moving]
        # Only the clusters this deployment left or joined change occupancy.
        for name in {r.spec.cluster_name for r in (*dropped, *given, *moving)}:
            pinned[name] = [r for r in pinned[name] if not owns(deployment, r)]
            pinned[name].extend(g for g in (*given, *moving) if g.spec.cluster_name == name)
            if name in views:
                current[name] = occupancy_of(views[name], pinned[name])
        results.append(Scheduled(deployment, cache, result, given))
    return results
