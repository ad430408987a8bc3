"""Placing a replica's engines on one cluster: whole phase, then split phase (docs/scheduling.md,
"Matching, placing and packing").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from modelplane.api import ModelDeployment
from modelplane.memo import memoized
from modelplane.scheduling.capacity import ClusterState, Demand, PoolState, pods_of
from modelplane.scheduling.fleet import ClusterView, Pool, PoolShape
from modelplane.scheduling.matching import Match, Requests, match, member_requests
from modelplane.scheduling.model import EnginePlacement, MemberPlacement, Reason

_MAX_NODES_SHOWN = 8


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """A deployment member as placement needs it."""

    role: str
    requests: Requests
    pods: int  # pods(member) x copies


@dataclass(frozen=True, slots=True)
class EngineSpec:
    """A deployment engine as placement needs it."""

    name: str
    members: tuple[MemberSpec, ...]


def engine_specs(deployment: ModelDeployment) -> tuple[EngineSpec, ...]:
    """The deployment's engines, members and requests in deployment order (docs/scheduling.md,
    "Inputs, identity and result").
    """
    return tuple(
        EngineSpec(
            engine.name,
            tuple(
                MemberSpec(
                    m.role,
                    member_requests(m),
                    pods_of(m.role, m.worker.nodes if m.worker else None) * engine.copies,
                )
                for m in engine.members
            ),
        )
        for engine in deployment.spec.template.spec.engines
    )


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a replica cannot be placed on a cluster: a reason code, its message on demand
    (docs/scheduling.md, "Why replicas are missing").

    ``describe`` holds only immutable inputs (pools, match results, the pool states as they
    stood at the failed attempt: a trial copies a state before packing and a commit replaces
    states rather than changing them), so the text built later is the one of that moment.
    """

    reason: Reason
    describe: Callable[[], str] = field(compare=False, repr=False)

    @property
    def message(self) -> str:
        """The message, formatted now."""
        return self.describe()


@dataclass(frozen=True, slots=True)
class Trial:
    """A successful placement attempt: the engines' members and the trial pool states."""

    engines: tuple[EnginePlacement, ...]
    state: ClusterState


def member_placement(member: MemberSpec, pool: str, result: Match) -> MemberPlacement:
    """The placement record of a member on a pool (0 pods charged when it claims nothing)."""
    return MemberPlacement(
        role=member.role,
        pool=pool,
        pods=member.pods if result.resolved else 0,
        device_requests=result.resolved,
    )


def place_replica(
    engines: Sequence[EngineSpec], cluster: ClusterView, state: ClusterState
) -> Trial | Failure:
    """Place every engine on ``cluster`` on one shared trial; the first failure wins."""
    placed: list[EnginePlacement] = []
    for engine in engines:
        outcome = place_engine(engine, cluster.pools or (), state)
        if isinstance(outcome, Failure):
            return outcome
        placed.append(outcome)
    return Trial(tuple(placed), state)


# Drivers of host resources, not accelerators: a member claiming only these (a coordinator
# pinned to CPUs) holds no device that takes part in a collective, so it needs no fabric.
HOST_DRIVERS: frozenset[str] = frozenset({"dra.cpu"})


def _collective(result: Match, shape: PoolShape) -> bool:
    """The member claims an accelerator on this pool (a device of a non-host driver)."""
    return result.claims and any(
        shape.devices[i].driver not in HOST_DRIVERS for i, _ in result.demand
    )


def _collective_requests(member: MemberPlacement, pool: Pool) -> bool:
    """A placed member holds an accelerator on its pool; a class the pool does not publish
    counts as one (the safe reading)."""
    classes = {r.device_class_name for r in member.device_requests}
    if not classes:
        return False
    drivers = {d.driver for d in pool.shape.devices if d.device_class_name in classes}
    return not drivers or any(d not in HOST_DRIVERS for d in drivers)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What matching decides for an engine on a list of pool shapes, before any packing."""

    matches: tuple[tuple[Match, ...], ...]  # [member][pool]
    unmatched: int  # the first member that matches no pool, or -1
    claimers: tuple[bool, ...]  # [member] -> it claims on some pool
    collective: tuple[bool, ...]  # [member] -> it claims an accelerator on some pool
    acceptable: tuple[tuple[int, ...], ...]  # [member] -> acceptable pool indexes
    whole: tuple[int, ...]  # pools acceptable for every member

    @property
    def claimable(self) -> bool:
        """Some member claims on some pool."""
        return any(self.claimers)


@memoized("scheduling.plans", 1 << 12)
def _plan(engine: EngineSpec, shapes: tuple[PoolShape, ...]) -> _Plan:
    # Steps 1-4 depend only on the engine and the pools' shapes, so clusters with the same
    # pool shapes share one plan (docs/scheduling.md, "Device selectors"); only packing looks at a
    # cluster's free capacity.
    matches = tuple(tuple(match(m.requests, shape) for shape in shapes) for m in engine.members)
    unmatched = next((k for k, row in enumerate(matches) if not any(r.ok for r in row)), -1)
    claimers = tuple(any(r.claims for r in row) for row in matches)
    # A member able to claim somewhere is never placed claimless.
    acceptable = tuple(
        tuple(i for i, r in enumerate(row) if r.ok and (r.claims or not can))
        for row, can in zip(matches, claimers, strict=True)
    )
    whole = tuple(i for i in range(len(shapes)) if all(i in a for a in acceptable))
    collective = tuple(
        any(_collective(r, shape) for r, shape in zip(row, shapes, strict=True)) for row in matches
    )
    return _Plan(matches, unmatched, claimers, collective, acceptable, whole)


def place_engine(
    engine: EngineSpec, pools: Sequence[Pool], state: ClusterState
) -> EnginePlacement | Failure:
    """Place one engine's members on pools of one cluster, charging ``state``."""
    plan = _plan(engine, tuple(p.shape for p in pools))
    if plan.unmatched >= 0:
        role = engine.members[plan.unmatched].role
        row = plan.matches[plan.unmatched]
        shown = tuple(pools)
        return Failure(
            Reason.NO_MATCHING_POOL,
            lambda: (
                f"engine {engine.name} member {role}: no pool matches: "
                + "; ".join(_match_clause(p, r) for p, r in zip(shown, row, strict=True))
            ),
        )
    if not plan.claimable:
        return Failure(
            Reason.NO_CLAIMABLE_DEVICE,
            lambda: f"engine {engine.name}: no member resolves a claim: DRA device on any pool",
        )
    if plan.whole:
        return _whole_phase(engine, pools, state, plan.matches, plan.whole)
    return _split_phase(engine, pools, state, plan)


def _whole_phase(
    engine: EngineSpec,
    pools: Sequence[Pool],
    state: ClusterState,
    matches: tuple[tuple[Match, ...], ...],
    whole: tuple[int, ...],
) -> EnginePlacement | Failure:
    members = engine.members
    for i in whole:
        packs = [(matches[k][i].demand, m.pods) for k, m in enumerate(members)]
        if state.attempt(pools[i].name, packs):
            return EnginePlacement(
                engine.name,
                tuple(
                    member_placement(m, pools[i].name, matches[k][i]) for k, m in enumerate(members)
                ),
            )
    rooms = tuple(
        (
            pools[i],
            state.get(pools[i].name),
            tuple((m.role, m.pods, matches[k][i].demand) for k, m in enumerate(members)),
        )
        for i in whole
    )
    return _no_room(engine.name, None, rooms)


def _split_phase(
    engine: EngineSpec, pools: Sequence[Pool], state: ClusterState, plan: _Plan
) -> EnginePlacement | Failure:
    """No pool takes every member: split them across pools, on one fabric when the split
    needs one (docs/scheduling.md, "Splitting an engine across pools").

    A split needs a fabric when two or more members claim accelerators: they are the device
    collective, and no pool takes them both, so the collective would cross pools. Those
    members then go to pools of one fabric domain, the domains tried in pool order; the others
    (claimless, or holding host CPUs only) go anywhere acceptable, as before.
    """
    claimers = tuple(k for k, claims in enumerate(plan.collective) if claims)
    if len(claimers) < 2:
        return _split_on(engine, pools, state, plan.matches, plan.acceptable, None)
    acceptable = plan.acceptable
    domains = [
        d
        for d in dict.fromkeys(p.fabric.domain for p in pools)
        if d is not None
        and all(any(pools[i].fabric.domain == d for i in acceptable[k]) for k in claimers)
    ]
    if not domains:
        return _no_shared_fabric(engine, pools, plan, claimers)
    first: Failure | None = None
    for domain in domains:
        allowed = tuple(
            tuple(i for i in row if k not in claimers or pools[i].fabric.domain == domain)
            for k, row in enumerate(acceptable)
        )
        saved = dict(state.changed)
        outcome = _split_on(engine, pools, state, plan.matches, allowed, domain)
        if isinstance(outcome, EnginePlacement):
            return outcome
        # A failed domain leaves nothing charged: the next starts from the same state.
        state.changed.clear()
        state.changed.update(saved)
        first = first or outcome
    assert first is not None
    return first


def _split_on(
    engine: EngineSpec,
    pools: Sequence[Pool],
    state: ClusterState,
    matches: tuple[tuple[Match, ...], ...],
    acceptable: tuple[tuple[int, ...], ...],
    domain: str | None,
) -> EnginePlacement | Failure:
    placed: list[MemberPlacement] = []
    chosen_pools: list[Pool] = []
    for k, member in enumerate(engine.members):
        chosen = next(
            (
                i
                for i in acceptable[k]
                if state.attempt(pools[i].name, [(matches[k][i].demand, member.pods)])
            ),
            None,
        )
        if chosen is None:
            rooms = tuple(
                (
                    pools[i],
                    state.get(pools[i].name),
                    ((member.role, member.pods, matches[k][i].demand),),
                )
                for i in acceptable[k]
            )
            return _no_room(engine.name, member.role, rooms, domain)
        placed.append(member_placement(member, pools[chosen].name, matches[k][chosen]))
        chosen_pools.append(pools[chosen])
    members = tuple(placed)
    return EnginePlacement(engine.name, members, split_note(members, chosen_pools))


def split_verdict(members: Sequence[MemberPlacement], pools: Sequence[Pool]) -> tuple[bool, str]:
    """Whether an engine placed on ``pools`` (one per member) may run split, and why.

    One pool: not a split (allowed, no note). Members that claim devices on one pool at
    most: no collective crosses pools, so no fabric is needed. Otherwise the claiming
    members' pools must share one fabric domain (docs/scheduling.md, "Splitting an engine
    across pools").
    """
    names = list(dict.fromkeys(p.name for p in pools))
    if len(names) < 2:
        return True, ""
    where = ", ".join(names)
    claiming = [(m, p) for m, p in zip(members, pools, strict=True) if _collective_requests(m, p)]
    if len({p.name for _, p in claiming}) < 2:
        roles = " and ".join(m.role for m, _ in claiming) or "no member"
        return True, (
            f"split across pools {where}: allowed, only {roles} claims accelerators, "
            "so no device collective crosses pools and no fabric is needed"
        )
    domains = {p.fabric.domain for _, p in claiming}
    shown = ", ".join(
        f"{p.name} ({p.fabric.text()})" for p in dict.fromkeys(p for _, p in claiming)
    )
    if len(domains) == 1 and None not in domains:
        return True, f"split across pools {where}: allowed, they share {domains.pop()}"
    return False, (
        f"split across pools {shown}: refused, members that claim devices must share a fabric"
    )


def split_note(members: Sequence[MemberPlacement], pools: Sequence[Pool]) -> str:
    """The explain note of a placed engine ("" when it is not split)."""
    return split_verdict(members, pools)[1]


# ---------------------------------------------------------------------------------------------
# Explain clauses


def _match_clause(pool: Pool, result: Match) -> str:
    if result.failed_device is None:
        return f"pool {pool.name}: request {result.failed_request} matches no device"
    return (
        f"pool {pool.name}: request {result.failed_request} needs {result.failed_count} "
        f"of device {result.failed_device}, {result.failed_remaining} left"
    )


_Room = tuple[Pool, PoolState, tuple[tuple[str, int, Demand], ...]]


def _no_room(
    engine: str, role: str | None, rooms: tuple[_Room, ...], domain: str | None = None
) -> Failure:
    """InsufficientCapacity, worded for the whole phase (no role) or one split-phase member
    (``domain``: the fabric the split was confined to)."""

    def describe() -> str:
        who = f"engine {engine}" if role is None else f"engine {engine} member {role}"
        where = "no pool" if domain is None else f"no pool on {domain}"
        return f"{who}: {where} has room: {_room_clauses(rooms)}"

    return Failure(Reason.INSUFFICIENT_CAPACITY, describe)


def _no_shared_fabric(
    engine: EngineSpec, pools: Sequence[Pool], plan: _Plan, claimers: Sequence[int]
) -> Failure:
    """NoSharedFabric: no pool takes every member, and the members that claim devices fit
    no pools of one fabric domain."""
    shown = tuple(pools)

    def describe() -> str:
        roles = " and ".join(engine.members[k].role for k in claimers)
        fits = "; ".join(
            f"{engine.members[k].role} fits "
            + ", ".join(
                f"pool {shown[i].name} ({shown[i].fabric.text()})" for i in plan.acceptable[k]
            )
            for k in claimers
        )
        return (
            f"engine {engine.name}: no pool takes every member, and {roles} claim devices, "
            f"so a split needs pools sharing a fabric (EFA, or one InfiniBand fabric name): {fits}"
        )

    return Failure(Reason.NO_SHARED_FABRIC, describe)


def _room_clauses(rooms: Sequence[_Room]) -> str:
    return "; ".join(_room_clause(pool, state, needs) for pool, state, needs in rooms)


def _room_clause(pool: Pool, state: PoolState, needs: Sequence[tuple[str, int, Demand]]) -> str:
    claiming = [(role, pods, demand) for role, pods, demand in needs if demand and pods > 0]
    if state.closed:
        return f"pool {pool.name} is overcommitted by observed replicas"
    devices = pool.shape.devices
    shown = sorted({j for _, _, demand in claiming for j, _ in demand})
    need = " + ".join(
        f"{role} {pods}x{{{','.join(f'{devices[j].name}={n}' for j, n in demand)}}}"
        for role, pods, demand in claiming
    )
    total = state.node_count
    if not total:
        free = "(no nodes)"
    else:
        nodes = [
            "[" + ",".join(f"{devices[j].name}={node[j]}" for j in shown) + "]"
            for node in state.nodes(_MAX_NODES_SHOWN)
        ]
        free = ", ".join(nodes)
        if total > _MAX_NODES_SHOWN:
            free += f", ... ({total} nodes)"
    return f"pool {pool.name} needs {need}, free per node {free}"
