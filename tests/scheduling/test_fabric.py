"""Splitting an engine across pools only on a shared fabric (docs/scheduling.md, "Splitting an
engine across pools").

The fabric is ``InferenceCluster.spec.nodePools[].fabric`` as released upstream
(modelplaneai/modelplane v0.3.1, ``apis/inferenceclusters/definition.yaml``: type None | EFA |
InfiniBand; ``infiniband.fabric`` names the Nebius fabric a pool joins and is not used on AKS,
where the pool's own VM Scale Set placement group is its fabric). Upstream refuses every split
(v0.3.1 ``docs/content/architecture/scheduling.md``, "Co-scheduling and pools"); this project
keeps the seed's split and guards it with the fabric.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.api import InferenceCluster, KubeModel, ModelDeployment
from modelplane.cli.main import main
from modelplane.scheduling import CACHE_NONE, Schedule, schedule
from tests.builders import memory_selector

from .builders import (
    cluster,
    deployment,
    engine,
    gpu,
    host,
    inference_class,
    member,
    model_cache,
    pool,
    replica,
    request,
    stamped_member,
)

H200_MEMORY = "141Gi"
# The Leader needs an H200 (only the 4-GPU pool has one), each Worker node 8 GPUs (only the
# H100 pool has 8): no pool takes both, so the engine can only run split.
LEADER_GPU = member("Leader", request("gpu", 1, memory_selector(H200_MEMORY)))
WORKERS = member("Worker", request("gpu", 8, memory_selector("70Gi")), worker_nodes=2)
# A coordinator-only Leader: it matches only the CPU pool's synthetic host, so it claims nothing.
COORDINATOR = member("Leader", request("host", 1, 'device.driver == "cpu.example.com"'))


def gang() -> ModelDeployment:
    """Leader and Workers both claim GPUs: a split needs a fabric."""
    return deployment("coder", 1, engine("coder", LEADER_GPU, WORKERS), cache="weights")


def coordinated() -> ModelDeployment:
    """Only the Workers claim devices: a split needs no fabric."""
    return deployment("coder", 1, engine("coder", COORDINATOR, WORKERS), cache="weights")


def h200(name: str, nodes: int = 1) -> dict[str, Any]:
    return pool(name, nodes, gpu(4, H200_MEMORY))


def h100(name: str, nodes: int = 2) -> dict[str, Any]:
    return pool(name, nodes, gpu())


def cpu(name: str) -> dict[str, Any]:
    return pool(name, 1, host())


def ib(name: str | None = None) -> dict[str, Any]:
    fabric: dict[str, Any] = {"type": "InfiniBand"}
    if name is not None:
        fabric["infiniband"] = {"fabric": name}
    return fabric


EFA: dict[str, Any] = {"type": "EFA"}
NONE: dict[str, Any] = {"type": "None"}
ABSENT: dict[str, Any] = {}  # a node pool without a fabric block
UNKNOWN = None  # a published pool no node pool declares


def fleet(*pools: tuple[dict[str, Any], dict[str, Any] | None]) -> InferenceCluster:
    """One cluster publishing ``pools``; each declared in spec.nodePools with its fabric,
    unless the fabric is UNKNOWN."""
    node_pools = []
    for published, fabric in pools:
        if fabric is UNKNOWN:
            continue
        node_pool: dict[str, Any] = {"name": published["name"], "className": "any"}
        if fabric:
            node_pool["fabric"] = fabric
        node_pools.append(node_pool)
    return cluster("c1", *(p for p, _ in pools), node_pools=node_pools or None)


def run(d: ModelDeployment, clusters: list[InferenceCluster], observed: Any = ()) -> Schedule:
    return schedule(d, clusters, [], CACHE_NONE, observed)


def pools_of(s: Schedule) -> list[str]:
    return [m.pool for m in s.replicas[0].engines[0].members]


def refusal(a: str, b: str) -> str:
    return (
        "engine coder: no pool takes every member, and Leader and Worker claim devices, so a "
        "split needs pools sharing a fabric (EFA, or one InfiniBand fabric name): "
        f"Leader fits pool a ({a}); Worker fits pool b ({b})"
    )


@dataclass(frozen=True)
class Row:
    case: str
    deployment: ModelDeployment
    leader_fabric: dict[str, Any] | None
    worker_fabric: dict[str, Any] | None
    # The split's explain note when placed, else (reason, message) of the refusal.
    placed: str | None = None
    refused: tuple[str, str] | None = None


def allowed_by(domain: str) -> str:
    return f"split across pools a, b: allowed, they share {domain}"


NO_FABRIC_NEEDED = (
    "split across pools a, b: allowed, only Worker claims accelerators, so no device collective "
    "crosses pools and no fabric is needed"
)

ROWS = [
    Row(
        "ib-same-fabric", gang(), ib("fabric-1"), ib("fabric-1"), allowed_by("InfiniBand fabric-1")
    ),
    Row(
        "ib-different-fabrics",
        gang(),
        ib("fabric-1"),
        ib("fabric-2"),
        refused=("NoSharedFabric", refusal("InfiniBand fabric-1", "InfiniBand fabric-2")),
    ),
    Row("efa-efa", gang(), EFA, EFA, allowed_by("EFA")),
    Row(
        "efa-ib",
        gang(),
        EFA,
        ib("fabric-1"),
        refused=("NoSharedFabric", refusal("EFA", "InfiniBand fabric-1")),
    ),
    Row(
        "ib-unnamed",  # AKS: each pool's placement group is its own fabric
        gang(),
        ib(),
        ib(),
        refused=(
            "NoSharedFabric",
            refusal("InfiniBand, no fabric named", "InfiniBand, no fabric named"),
        ),
    ),
    Row(
        "none-none",
        gang(),
        NONE,
        NONE,
        refused=("NoSharedFabric", refusal("fabric None", "fabric None")),
    ),
    Row(
        "absent-reads-none",
        gang(),
        ABSENT,
        EFA,
        refused=("NoSharedFabric", refusal("fabric None", "EFA")),
    ),
    Row(
        "unknown",
        gang(),
        UNKNOWN,
        UNKNOWN,
        refused=(
            "NoSharedFabric",
            refusal(
                "fabric unknown: no spec.nodePools entry", "fabric unknown: no spec.nodePools entry"
            ),
        ),
    ),
    Row(
        "unknown-beside-efa",
        gang(),
        EFA,
        UNKNOWN,
        refused=("NoSharedFabric", refusal("EFA", "fabric unknown: no spec.nodePools entry")),
    ),
    Row("coordinator-none", coordinated(), NONE, NONE, NO_FABRIC_NEEDED),
    Row("coordinator-unknown", coordinated(), UNKNOWN, UNKNOWN, NO_FABRIC_NEEDED),
    Row(
        "coordinator-different-ib", coordinated(), ib("fabric-1"), ib("fabric-2"), NO_FABRIC_NEEDED
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.case for r in ROWS])
def test_a_split_needs_a_shared_fabric_unless_one_member_claims(row: Row) -> None:
    leader_pool = h200("a") if _claims(row) else cpu("a")
    c = fleet((leader_pool, row.leader_fabric), (h100("b"), row.worker_fabric))
    s = run(row.deployment, [c])
    if row.placed is not None:
        assert pools_of(s) == ["a", "b"]
        assert s.replicas[0].engines[0].split == row.placed
        assert s.explain == ()
    else:
        assert s.replicas == ()
        assert [(e.reason, e.message) for e in s.explain] == [row.refused]
        # The deployment's condition counts it like the other reasons about the pools.
        assert s.shortfall is not None and s.shortfall.reason == "InsufficientCapacity"
        assert s.shortfall.message() == "0/1 clusters available: 1 NoSharedFabric"


def _claims(row: Row) -> bool:
    leader = row.deployment.spec.template.spec.engines[0].members[0]
    return leader.node_selector is not None and leader.node_selector.devices[0].name == "gpu"


def test_one_pool_is_no_split_whatever_the_fabric() -> None:
    # A pool that takes every member wins before any split: no fabric is asked for.
    both = pool("ab", 3, gpu(8, H200_MEMORY))
    s = run(gang(), [fleet((both, NONE))])
    assert pools_of(s) == ["ab", "ab"]
    assert s.replicas[0].engines[0].split == ""


def test_the_next_shared_fabric_is_tried_when_the_first_is_full() -> None:
    # fabric-1's H100 pool has no nodes left: the gang goes to fabric-2, never across them.
    c = fleet(
        (h200("a1"), ib("fabric-1")),
        (h100("b1", nodes=0), ib("fabric-1")),
        (h200("a2"), ib("fabric-2")),
        (h100("b2"), ib("fabric-2")),
    )
    s = run(gang(), [c])
    assert pools_of(s) == ["a2", "b2"]
    assert s.replicas[0].engines[0].split == (
        "split across pools a2, b2: allowed, they share InfiniBand fabric-2"
    )


def test_a_shared_fabric_without_room_is_insufficient_capacity() -> None:
    # The only fabric both members fit is full; the EFA H100 pool with room is not on it.
    c = fleet((h200("a"), ib("fabric-1")), (h100("b", nodes=1), ib("fabric-1")), (h100("x"), EFA))
    s = run(gang(), [c])
    assert s.replicas == ()
    assert [(e.reason, e.message) for e in s.explain] == [
        (
            "InsufficientCapacity",
            "engine coder member Worker: no pool on InfiniBand fabric-1 has room: pool b needs "
            "Worker 2x{gpu=8}, free per node [gpu=8]",
        )
    ]


def derived(worker_fabric: dict[str, Any]) -> InferenceCluster:
    """A cluster publishing no pools: they come from spec.nodePools and the classes."""
    wire = cluster("c1").to_wire()
    wire["spec"]["nodePools"] = [
        {"name": "a", "className": "h200-4x", "fabric": ib("fabric-1")},
        {"name": "b", "className": "h100-8x", "nodeCount": 2, "fabric": worker_fabric},
    ]
    return InferenceCluster.model_validate(wire)


def test_derived_pools_carry_their_node_pools_fabric() -> None:
    classes = [inference_class("h200-4x", gpu(4, H200_MEMORY)), inference_class("h100-8x", gpu())]
    s = schedule(gang(), [derived(ib("fabric-1"))], classes, CACHE_NONE, [])
    assert pools_of(s) == ["a", "b"]
    s = schedule(gang(), [derived(ib("fabric-2"))], classes, CACHE_NONE, [])
    assert [e.reason for e in s.explain] == ["NoSharedFabric"]


def observed_split(ready: bool) -> Any:
    return replica(
        "coder", "c1", 0,
        {"name": "coder", "copies": 1, "members": [
            stamped_member("a", "Leader", [("gpu", "gpu.nvidia.com", 1)]),
            stamped_member("b", "Worker", [("gpu", "gpu.nvidia.com", 8)], worker_nodes=2)]},
        ready=ready,
    )  # fmt: skip


def test_a_retained_split_on_one_fabric_is_kept() -> None:
    c = fleet((h200("a"), EFA), (h100("b", nodes=4), EFA))
    s = run(gang(), [c], [observed_split(ready=True)])
    assert [(p.index, p.retained) for p in s.replicas] == [(0, True)]
    assert s.superseded == ()


def test_a_retained_split_across_fabrics_is_replaced_before_it_goes() -> None:
    # Placed before the rule (or the fabrics changed): re-placed like a changed shape. A Ready
    # one keeps serving until its replacement is Ready; here nothing else fits, so it stays.
    c = fleet((h200("a"), ib("fabric-1")), (h100("b", nodes=4), ib("fabric-2")))
    s = run(gang(), [c], [observed_split(ready=True)])
    assert s.replicas == ()
    assert [(m.placement.cluster, m.placement.index, m.cause.value) for m in s.superseded] == [
        ("c1", 0, "ShapeChanged")
    ]
    assert [e.reason for e in s.explain] == ["NoSharedFabric"]


# ---------------------------------------------------------------------------------------------
# schedule --explain


def write(path: Path, *objects: KubeModel) -> None:
    path.write_text(yaml.safe_dump_all([o.to_wire() for o in objects], sort_keys=False))


def test_explain_says_why_a_split_is_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = fleet((h200("a"), ib("fabric-1")), (h100("b"), ib("fabric-1")))
    write(tmp_path / "in.yaml", c, gang(), model_cache("weights"))
    assert main(["schedule", str(tmp_path), "--explain"]) == 0
    out = capsys.readouterr().out
    name = run(gang(), [c]).replicas[0].name
    assert (
        f"  splits:\n    {name} on c1: engine coder split across pools a, b: allowed, they "
        "share InfiniBand fabric-1\n"
    ) in out
    assert main(["schedule", str(tmp_path), "--explain", "-o", "json"]) == 0
    (dep,) = json.loads(capsys.readouterr().out)["deployments"]
    assert dep["splits"] == [
        {
            "replica": name,
            "cluster": "c1",
            "engine": "coder",
            "message": "split across pools a, b: allowed, they share InfiniBand fabric-1",
        }
    ]
    # Without --explain the JSON shape is as before.
    assert main(["schedule", str(tmp_path), "-o", "json"]) == 0
    (plain,) = json.loads(capsys.readouterr().out)["deployments"]
    assert "splits" not in plain


def test_explain_says_why_a_split_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = fleet((h200("a"), ib("fabric-1")), (h100("b"), ib("fabric-2")))
    write(tmp_path / "in.yaml", c, gang(), model_cache("weights"))
    assert main(["schedule", str(tmp_path), "--explain", "-o", "json"]) == 0
    (dep,) = json.loads(capsys.readouterr().out)["deployments"]
    assert dep["explain"] == [
        {
            "cluster": "c1",
            "reason": "NoSharedFabric",
            "message": refusal("InfiniBand fabric-1", "InfiniBand fabric-2"),
        }
    ]
    assert dep["splits"] == []
    (scheduled,) = (c for c in dep["conditions"] if c["type"] == "ReplicasScheduled")
    assert (scheduled["reason"], scheduled["message"]) == (
        "InsufficientCapacity",
        "0 of 1 replicas scheduled: 0/1 clusters available: 1 NoSharedFabric",
    )


# ---------------------------------------------------------------------------------------------
# The invariant

# Shared fabrics drawn more often than the rest, so same-fabric splits happen too.
FABRICS: list[dict[str, Any] | None] = [
    UNKNOWN,
    ABSENT,
    NONE,
    EFA,
    EFA,
    ib(),
    ib("fabric-1"),
    ib("fabric-1"),
    ib("fabric-2"),
]


def _pool(name: str, kind: str, nodes: int) -> dict[str, Any]:
    if kind == "h200":
        return h200(name, nodes)
    if kind == "h100":
        return h100(name, nodes)
    return cpu(name)


@st.composite
def worlds(draw: st.DrawFn) -> tuple[ModelDeployment, list[InferenceCluster]]:
    clusters = []
    for c in range(draw(st.integers(1, 3))):
        pools = []
        for p in range(draw(st.integers(2, 4))):
            kind = draw(st.sampled_from(["h200", "h100", "cpu"]))
            published = _pool(f"p{p}", kind, draw(st.integers(0, 3)))
            pools.append((published, draw(st.sampled_from(FABRICS))))
        built = fleet(*pools)
        clusters.append(
            InferenceCluster.model_validate({**built.to_wire(), "metadata": {"name": f"c{c}"}})
        )
    leader = draw(st.sampled_from([LEADER_GPU, COORDINATOR, member("Leader", request("gpu", 1))]))
    workers = member(
        "Worker",
        request("gpu", draw(st.sampled_from([4, 8])), memory_selector("70Gi")),
        worker_nodes=draw(st.integers(1, 2)),
    )
    d = deployment("coder", draw(st.integers(1, 4)), engine("coder", leader, workers), cache="w")
    return d, clusters


def _domain(c: InferenceCluster, pool_name: str) -> str | None:
    for node_pool in c.spec.node_pools or ():
        if node_pool.name == pool_name and node_pool.fabric is not None:
            f = node_pool.fabric
            if f.type == "EFA":
                return "EFA"
            if f.type == "InfiniBand" and f.infiniband is not None:
                return "IB/" + f.infiniband.fabric
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_no_engine_is_split_across_fabrics_unless_it_needs_none(
    world: tuple[ModelDeployment, list[InferenceCluster]],
) -> None:
    d, clusters = world
    by_name = {c.metadata.name: c for c in clusters}
    s = run(d, clusters)
    for p in s.replicas:
        for e in p.engines:
            claiming = {m.pool for m in e.members if m.device_requests}
            if len(claiming) > 1:
                domains = {_domain(by_name[p.cluster], name) for name in claiming}
                assert len(domains) == 1 and None not in domains, (p.cluster, e)
            pools = {m.pool for m in e.members}
            # Every split says why it was allowed; an engine on one pool says nothing.
            assert bool(e.split) == (len(pools) > 1)
