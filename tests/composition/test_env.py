"""Injected environment (docs/composition.md, "Pods")."""

from __future__ import annotations

from typing import Any

from modelplane.composition import compose_replica

from .builders import cluster, gang_engine, manifests, pod_templates, replica, standalone_engine

LWS = "ml-team-qwen3-8b-e7f0a-big-206b3"
PCS = "ml-team-qwen3-8b-e-206b3"
GROVE_ADDRESS = f"{PCS}-0-gang-$(MODELPLANE_GANG_INDEX)-leader-0.{PCS}-0.ml-team.svc.cluster.local"
LWS_ADDRESS = f"{LWS}-$(MODELPLANE_GANG_INDEX).{LWS}.ml-team"
# Every container of a pod that mounts a ModelCache: the hub cache there, offline.
CACHE_ENV = [("HF_HUB_CACHE", "/mnt/models"), ("HF_HUB_OFFLINE", "1")]


def _label(label: str) -> dict[str, Any]:
    return {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}


def _env_by_container(pod: dict[str, Any]) -> dict[str, list[tuple[str, Any]]]:
    return {
        c["name"]: [(e["name"], e.get("value", e.get("valueFrom"))) for e in c["env"]]
        for c in pod["spec"]["containers"]
    }


def _gang_with_sidecars(stack: str) -> tuple[dict[str, Any], dict[str, Any]]:
    engine = gang_engine()
    for member in engine["members"]:
        member["template"]["spec"]["containers"].append(
            {"name": "agent", "image": "agent:1", "env": [{"name": "A", "value": "1"}]}
        )
    objs = manifests(
        compose_replica(replica([engine], modelCacheRef={"name": "c"}), cluster(stack))
    )
    leader, worker = pod_templates(objs["model-serving-big"])
    return leader, worker


def test_standard_gang_gets_address_and_rank_from_lws_labels_in_every_container() -> None:
    leader, worker = _gang_with_sidecars("Standard")
    expected = [
        ("MODELPLANE_SERVED_MODEL_NAME", "ml-team/qwen3-8b"),
        ("MODELPLANE_GANG_INDEX", _label("leaderworkerset.sigs.k8s.io/group-index")),
        ("MODELPLANE_LEADER_ADDRESS", LWS_ADDRESS),
        ("MODELPLANE_RANK", _label("leaderworkerset.sigs.k8s.io/worker-index")),
    ]
    for pod in (leader, worker):
        env = _env_by_container(pod)
        assert env["engine"] == [*expected, *CACHE_ENV]
        assert env["agent"] == [*expected, *CACHE_ENV, ("A", "1")]


def test_dynamo_gang_ranks_only_the_leader() -> None:
    leader, worker = _gang_with_sidecars("Dynamo")
    base = [
        ("MODELPLANE_SERVED_MODEL_NAME", "ml-team/qwen3-8b"),
        ("MODELPLANE_GANG_INDEX", _label("grove.io/podcliquescalinggroup-replica-index")),
        ("MODELPLANE_LEADER_ADDRESS", GROVE_ADDRESS),
    ]
    assert _env_by_container(leader) == {
        "engine": [*base, ("MODELPLANE_RANK", "0"), *CACHE_ENV],
        "agent": [*base, ("MODELPLANE_RANK", "0"), *CACHE_ENV, ("A", "1")],
    }
    assert _env_by_container(worker) == {
        "engine": [*base, *CACHE_ENV],
        "agent": [*base, *CACHE_ENV, ("A", "1")],
    }


def test_standalone_gets_no_leader_or_rank() -> None:
    pod = manifests(compose_replica(replica(), cluster("Dynamo")))["model-serving-qwen3-8b"][
        "spec"
    ]["template"]
    assert _env_by_container(pod) == {
        "engine": [("MODELPLANE_SERVED_MODEL_NAME", "ml-team/qwen3-8b")]
    }


def test_a_user_entry_with_an_injected_name_replaces_it_where_the_user_put_it() -> None:
    # MD-30 refuses this in a deployment; a hand-written replica can still carry it.
    engine = gang_engine()
    engine["members"][0]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "FIRST", "value": "1"},
        {"name": "MODELPLANE_RANK", "value": "7"},
    ]
    objs = manifests(compose_replica(replica([engine], modelCacheRef={"name": "c"}), cluster()))
    leader, _ = pod_templates(objs["model-serving-big"])
    assert _env_by_container(leader)["engine"] == [
        ("MODELPLANE_SERVED_MODEL_NAME", "ml-team/qwen3-8b"),
        ("MODELPLANE_GANG_INDEX", _label("leaderworkerset.sigs.k8s.io/group-index")),
        ("MODELPLANE_LEADER_ADDRESS", LWS_ADDRESS),
        *CACHE_ENV,
        ("FIRST", "1"),
        ("MODELPLANE_RANK", "7"),
    ]


def test_a_cache_sets_the_hub_cache_offline_and_the_user_may_override_it() -> None:
    def env(cache: bool, user: list[dict[str, str]] | None = None) -> list[tuple[str, Any]]:
        engine = standalone_engine()
        if user is not None:
            engine["members"][0]["template"]["spec"]["containers"][0]["env"] = user
        extra = {"modelCacheRef": {"name": "c"}} if cache else {}
        pod = manifests(compose_replica(replica([engine], **extra), cluster()))
        template = pod["model-serving-qwen3-8b"]["spec"]["template"]
        return _env_by_container(template)["engine"]

    served = ("MODELPLANE_SERVED_MODEL_NAME", "ml-team/qwen3-8b")
    assert env(cache=True) == [served, *CACHE_ENV]
    # Without a cache the engine downloads from the hub as before: nothing hub-related set.
    assert env(cache=False) == [served]
    # A user who wants the hub reachable says so; the user's entry wins where the user put it.
    online = [{"name": "HF_HUB_OFFLINE", "value": "0"}]
    assert env(cache=True, user=online) == [
        served,
        ("HF_HUB_CACHE", "/mnt/models"),
        ("HF_HUB_OFFLINE", "0"),
    ]


def test_value_from_is_kept_as_written_and_unset_fields_dropped() -> None:
    engine = standalone_engine()
    engine["members"][0]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        {
            "name": "CFG",
            "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k", "optional": True}},
        },
    ]
    pod = manifests(compose_replica(replica([engine]), cluster()))["model-serving-qwen3-8b"][
        "spec"
    ]["template"]
    assert pod["spec"]["containers"][0]["env"][1:] == [
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        {
            "name": "CFG",
            "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k", "optional": True}},
        },
    ]


def test_served_model_name_uses_namespace_and_deployment() -> None:
    objs = manifests(compose_replica(replica(namespace="prod", deployment="llama"), cluster()))
    engine = objs["model-serving-qwen3-8b"]["spec"]["template"]["spec"]["containers"][0]
    picker = objs["epp"]["spec"]["template"]["spec"]["containers"][0]
    assert engine["env"][0] == {"name": "MODELPLANE_SERVED_MODEL_NAME", "value": "prod/llama"}
    assert picker["env"][0] == {"name": "MODELPLANE_SERVED_MODEL_NAME", "value": "prod/llama"}
