"""Changes without outage, as a property: random fleets, random edit sequences.

Over render feed-back (the deployment reconcile alone, as ``World(compose=False)``), with
replicas loading at random: from one reconcile to the next, the routed (Ready) replicas never
drop below ``min(before, desired - maxUnavailable)``, nor from some to none, except on the
edits allowed to cost capacity (a deleted cluster, a scale-down); a pool never holds more
replicas than it has GPUs; while replicas move, at most ``desired + maxSurge`` exist; and a
replica's device requests (its immutable ResourceClaimTemplates) never change under its name.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reconcile.feedback import World
from tests.reconcile.fleet import cluster, deployment

MAX_UNAVAILABLE = 1  # the defaults of docs/api.md "Rollouts", spelled here
MAX_SURGE = 1
DRAIN = {"key": "maintenance", "value": "now", "effect": "NoExecute"}


@st.composite
def fleets(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 4))
    out = []
    for i in range(count):
        zone = draw(st.sampled_from(["a", "b"]))
        gpus = draw(st.integers(1, 3))
        nodes = draw(st.integers(1, 2))
        out.append(
            cluster(
                f"c{i}", labels={"zone": zone}, gpus=gpus, nodes=nodes, gateway=f"203.0.113.{i + 1}"
            )
        )
    return out


EDITS = st.one_of(
    st.tuples(st.just("image"), st.integers(0, 3)),
    # A GPU count: the ResourceClaimTemplate refuses it in place, so replicas are replaced.
    st.tuples(st.just("gpus"), st.integers(1, 2)),
    st.tuples(st.just("zone"), st.sampled_from(["a", "b", "none", "typo"])),
    st.tuples(st.just("drain"), st.integers(0, 3)),
    st.tuples(st.just("undrain"), st.integers(0, 3)),
    st.tuples(st.just("rename"), st.integers(0, 3)),
    st.tuples(st.just("delete"), st.integers(0, 3)),
    st.tuples(st.just("scale"), st.integers(1, 4)),
    st.tuples(st.just("wait"), st.just(0)),
)


def _deployment(replicas: int, image: int, zone: str, gpus: int = 1) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if zone != "none":
        extra["clusterSelector"] = {"matchLabels": {"zone": zone}}
    d = deployment(replicas, **extra)
    container = d["spec"]["template"]["spec"]["engines"][0]["members"][0]["template"]["spec"][
        "containers"
    ][0]
    container["image"] = f"vllm/vllm-openai:v0.2{image}.0"
    d["spec"]["template"]["spec"]["engines"][0]["members"][0]["nodeSelector"]["devices"][0][
        "count"
    ] = gpus
    return d


def _claims(replica: dict[str, Any]) -> list[Any]:
    """What a replica's ResourceClaimTemplates are composed from: its device requests."""
    return [m.get("deviceRequests") for e in replica["spec"]["engines"] for m in e["members"]]


def _capacity(clusters: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    return {
        (c["metadata"]["name"], p["name"]): p["nodes"] * p["devices"][0]["count"]
        for c in clusters
        for p in c["status"]["gpuPools"]
    }


def _charged(replicas: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for r in replicas:
        for engine in r["spec"]["engines"]:
            for m in engine["members"]:
                key = (r["spec"]["clusterName"], m["nodePoolName"])
                gpus = sum(q["count"] for q in m.get("deviceRequests") or ())
                out[key] = out.get(key, 0) + gpus * engine.get("copies", 1)
    return out


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    fleet=fleets(),
    replicas=st.integers(1, 4),
    edits=st.lists(EDITS, min_size=1, max_size=6),
    loads=st.lists(st.integers(0, 3), min_size=24, max_size=24),
)
def test_ready_replicas_never_drop_below_the_rollout_floor(
    fleet: list[dict[str, Any]],
    replicas: int,
    edits: list[tuple[str, Any]],
    loads: list[int],
) -> None:
    image, zone, desired, gpus = 0, "none", replicas, 1
    world = World([_deployment(desired, image, zone)], fleet, compose=False)
    world.settle(6)
    routed = len(world.routed())
    tick = 0
    for kind, arg in edits:
        exempt = False
        if kind == "image":
            image = arg
        elif kind == "gpus":
            gpus = arg
        elif kind == "zone":
            zone = arg
        elif kind == "scale":
            exempt = arg < desired
            desired = arg
        elif arg < len(world.clusters):
            target = world.clusters[arg]
            if kind == "drain":
                target["spec"]["taints"] = [DRAIN]
            elif kind == "undrain":
                target["spec"].pop("taints", None)
            elif kind == "rename":
                pool = target["status"]["gpuPools"][0]
                pool["name"] = "h200" if pool["name"] == "h100" else "h100"
            elif kind == "delete":
                world.clusters = [c for c in world.clusters if c is not target]
                exempt = True
        world.deployments = [_deployment(desired, image, zone, gpus)]
        # A few reconciles per edit, replicas loading at random in between.
        for _ in range(4):
            pattern = loads[tick % len(loads)]
            tick += 1
            claims = {x["metadata"]["name"]: _claims(x) for x in world.replicas}
            r = world.step(load=lambda name, p=pattern: sum(name.encode()) % 4 < p)
            for x in r.replicas:  # a claim template is never rewritten under its name
                before = claims.get(x["metadata"]["name"])
                assert before is None or before == _claims(x), x["metadata"]["name"]
            now_routed = len(r.endpoints)
            if not exempt:
                assert now_routed >= min(routed, desired - MAX_UNAVAILABLE), (kind, arg)
                # ... and never from serving to nothing, whatever the replica count.
                assert now_routed >= min(routed, 1), (kind, arg)
            exempt = False  # only the reconcile that saw the edit may pay for it
            routed = now_routed
            capacity = _capacity(world.clusters)
            for key, charged in _charged(world.replicas).items():
                if key in capacity:  # a replica on a pool that is gone charges nothing
                    assert charged <= capacity[key], key
            if r.result.schedule.superseded:
                assert len(r.replicas) <= desired + MAX_SURGE + sum(
                    1 for s in r.result.schedule.superseded if s.retiring
                )
