"""Team namespaces on every cluster (docs/composition.md, "Team namespaces").

Which namespace a new replica's objects go to, what the InferenceCluster composes for each
team namespace its replicas are in (and stops composing when none is left), the bound on
their number, and the upgrade of a replica an earlier release wrote into ``default``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelplane.api import InferenceClass, InferenceCluster, ModelReplica
from modelplane.composition.namespaces import (
    MAX_TEAM_NAMESPACES,
    bounded_team_namespaces,
    team_namespace,
)
from modelplane.composition.observed import ObservedObject
from modelplane.reconcile.cluster import ClassLookups, compose_cluster
from modelplane.stack.components import configured_objects
from tests.builders import inference_class, inference_cluster, replica_labels, seed_replica
from tests.reconcile.feedback import World, said
from tests.reconcile.fleet import cluster, deployment

REMOTE = "modelplane.ai/remote-namespace"
SHARED = ("epp-serviceaccount", "epp-role", "epp-rolebinding", "epp-config")


@pytest.mark.parametrize(
    ("namespace", "cached", "remote"),
    [
        ("ml-team", False, "ml-team"),  # a team's own namespace on every cluster
        ("ml-team", True, "default"),  # a cache's PVC is in default, a pod mounts its own
        ("default", False, "default"),  # nothing to separate
        (None, False, "default"),  # no namespace reads default
        ("kube-system", False, "default"),  # a cluster's own: never created or labelled
        ("kube-public", False, "default"),
        ("kube-node-lease", False, "default"),
        ("kube-anything", False, "default"),  # every kube-* name
        ("modelplane-system", False, "default"),  # ours: the stack and shared objects
        ("kubeflow", False, "kubeflow"),  # kube without the dash is a team's
    ],
)
def test_team_namespace(namespace: str | None, cached: bool, remote: str) -> None:
    assert team_namespace(namespace, cached) == remote


def _replica(namespace: str, name: str, remote: str | None = "") -> ModelReplica:
    """A replica on us-east-1; ``remote`` its label ("" the team's, None an earlier
    release's: no label)."""
    obj = seed_replica()
    obj["metadata"] = {
        "name": name,
        "namespace": namespace,
        "labels": replica_labels("qwen3-8b", namespace, "us-east-1", 0, remote),
    }
    return ModelReplica.model_validate(obj)


def _keys(replicas: list[ModelReplica] | None, observed: dict[str, Any] | None = None) -> Any:
    pools = [{"name": "h100", "className": "h100-8x", "nodeCount": 1}]
    wire = inference_cluster("us-east-1", node_pools=pools)
    classes = ClassLookups({"h100-8x": InferenceClass.model_validate(inference_class())}, (), ())
    composed = compose_cluster(
        InferenceCluster.model_validate(wire), classes, observed or {}, replicas
    )
    return composed, {o.key: o.object for o in composed.objects}


def test_a_cluster_composes_namespace_and_shared_objects_per_team_namespace() -> None:
    replicas = [
        _replica("ml-team", "a"),
        _replica("ml-team", "b"),
        _replica("team-b", "c"),
        _replica("team-c", "d", remote="default"),  # a cached deployment's: in default
        _replica("team-d", "e", remote=None),  # an earlier release's: in default
    ]
    _, objects = _keys(replicas)
    teams = sorted(k for k in objects if k.startswith("team-namespace-"))
    assert teams == ["team-namespace-ml-team", "team-namespace-team-b"]
    for ns in ("ml-team", "team-b"):
        namespace = objects[f"team-namespace-{ns}"]["spec"]
        assert namespace["forProvider"]["manifest"]["kind"] == "Namespace"
        assert namespace["forProvider"]["manifest"]["metadata"]["name"] == ns
        # Created and kept, never deleted: the namespace may predate us.
        assert "Delete" not in namespace["managementPolicies"]
        assert "*" not in namespace["managementPolicies"]
        for key in SHARED:
            manifest = objects[f"{key}-{ns}"]["spec"]["forProvider"]["manifest"]
            assert manifest["metadata"]["namespace"] == ns
    # default's shared objects stay for the replicas there.
    assert all(key in objects for key in SHARED)


def test_a_team_namespace_left_empty_is_no_longer_composed() -> None:
    _, before = _keys([_replica("ml-team", "a"), _replica("team-b", "b")])
    observed = {k: ObservedObject(name=k) for k in before}
    # The last ml-team replica is gone: its Object and shared objects are withdrawn (the
    # Object omits Delete from its policies, so the namespace itself stays on the cluster).
    _, after = _keys([_replica("team-b", "b")], observed)
    assert not [k for k in after if k.endswith("ml-team")]
    assert "team-namespace-team-b" in after
    # The replicas not fetched yet: what was composed stays (a blip never withdraws them).
    _, blip = _keys(None, observed)
    assert {"team-namespace-ml-team", "team-namespace-team-b"} <= set(blip)


def test_team_namespaces_are_bounded_composed_ones_first() -> None:
    found = {f"t{i:04d}" for i in range(MAX_TEAM_NAMESPACES + 3)}
    composed = {"t9999", "t0130"}  # t9999 no longer has replicas
    kept, left_out = bounded_team_namespaces(found, composed & found)
    assert len(kept) == MAX_TEAM_NAMESPACES and "t0130" in kept
    assert len(left_out) == 3 and "t0130" not in left_out
    assert bounded_team_namespaces({"default", "kube-system", "a"}, set()) == (("a",), ())
    replicas = [_replica(f"t{i:04d}", f"r{i}") for i in range(MAX_TEAM_NAMESPACES + 1)]
    composed_cluster, objects = _keys(replicas)
    assert sum(k.startswith("team-namespace-") for k in objects) == MAX_TEAM_NAMESPACES
    [event] = [e for e in composed_cluster.events if e.severity == "Warning"]
    assert event.message.startswith(f"1 team namespaces over the bound of {MAX_TEAM_NAMESPACES}")
    assert event.message.endswith(f"t{MAX_TEAM_NAMESPACES:04d}")


def _old_layout(world: World) -> None:
    """Each observed replica as an earlier release wrote it: no remote-namespace label."""
    for replica in world.replicas:
        replica["metadata"]["labels"].pop(REMOTE)


def test_an_earlier_release_replica_moves_to_its_team_namespace_make_before_break() -> None:
    world = World([deployment(1)], [cluster("c1", nodes=2)])
    world.settle()
    _old_layout(world)
    (old,) = world.names()
    assert world.routed() == [old]
    seen_new: set[str] = set()
    overlap = False  # the old and its replacement observed side by side (make-before-break)
    for step in range(10):
        r = world.step(load=set(seen_new))  # a new replica loads one step after it appears
        seen_new |= {n for n in world.names() if n != old}
        by_name = {x["metadata"]["name"]: x for x in world.replicas}
        # The old replica keeps its layout (no label, objects in default) while it runs.
        if old in by_name:
            assert REMOTE not in by_name[old]["metadata"]["labels"]
            objects = [o for c, o in r.remote if o["metadata"]["name"].startswith(old)]
            assert objects, step
            namespaces = {
                o["spec"]["forProvider"]["manifest"]["metadata"].get("namespace") for o in objects
            }
            assert namespaces <= {"default", None}
        # Someone serves at every step; the old one goes only once a new one is Ready.
        assert world.routed(), step
        ready_new = [n for n in world.ready() if n != old]
        if old not in by_name:
            assert ready_new, step
        overlap |= old in by_name and len(by_name) > 1
        if said(r, "Progressing")[1] == "RolloutComplete" and old not in by_name:
            break
    else:
        pytest.fail("the replacement never completed")
    assert overlap
    (new,) = world.names()
    assert new != old
    replica = copy.deepcopy({x["metadata"]["name"]: x for x in world.replicas}[new])
    assert replica["metadata"]["labels"][REMOTE] == "ml-team"
    assert world.routed() == [new]


@pytest.mark.parametrize("name", ["inference-gateway", "gke-gateway"])
def test_the_gateways_we_install_admit_routes_from_team_namespaces(name: str) -> None:
    # A listener's allowedRoutes defaults to namespaces from Same (kubernetes-sigs/gateway-api
    # v1.5.1 apis/v1/gateway_types.go): routes in ml-team would not attach without All.
    gateway = dict(configured_objects(name))["gateway"]
    (listener,) = gateway["spec"]["listeners"]
    assert listener["allowedRoutes"] == {"namespaces": {"from": "All"}}
