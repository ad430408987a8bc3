"""Gangs find their leader and rank on LWS, released Grove (appends) and Grove main (prepends).

Each composed gang is run through a simulation of its operator (``operators.py``, written
from the released sources) and of the kubelet's ``$(VAR)`` expansion; every reference a
composed container makes must resolve, and to the real leader's address.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.composition import compose_replica

from .builders import cluster, gpu_request, manifests, replica
from .operators import (
    Unresolved,
    append,
    gangs,
    kubelet_argv,
    kubelet_env,
    prepend,
    references,
)

# (stack, how that Grove orders its variables): LWS; every released Grove; Grove main.
STACKS = [
    pytest.param("Standard", append, id="lws-v0.10.0"),
    pytest.param("Dynamo", append, id="grove-v0.1.0-alpha.12-rc1-appends"),
    pytest.param("Dynamo", prepend, id="grove-main-3aba3f6e-prepends"),
]


def _container(name: str, rank: bool, **extra: Any) -> dict[str, Any]:
    """A container that uses the leader address (and the rank) in env, command and args."""
    env = [
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "LEADER", "value": "tcp://$(MODELPLANE_LEADER_ADDRESS):29500"},
    ]
    args = ["--master-addr=$(MODELPLANE_LEADER_ADDRESS)", "--copy=$(MODELPLANE_GANG_INDEX)"]
    if rank:
        env.append({"name": "NODE_RANK", "value": "$(MODELPLANE_RANK)"})
        args.append("--node-rank=$(MODELPLANE_RANK)")
    return {"name": name, "image": "vllm/vllm-openai:v0.11.0", "env": env, "args": args, **extra}


def _engine(stack: str, copies: int, nodes: int) -> dict[str, Any]:
    # On Dynamo the scheduler refuses a Worker that uses $(MODELPLANE_RANK)
    # (StackUnsupported), so a placed Dynamo Worker never references it.
    worker_rank = stack == "Standard"
    return {
        "name": "big",
        "copies": copies,
        "members": [
            {
                "role": "Leader",
                "nodePoolName": "h100",
                "deviceRequests": [gpu_request(8)],
                "template": {
                    "spec": {
                        "containers": [
                            _container("engine", rank=True),
                            _container("agent", rank=True, command=["sh", "-c"]),
                        ]
                    }
                },
            },
            {
                "role": "Worker",
                "nodePoolName": "h100",
                "deviceRequests": [gpu_request(8)],
                "worker": {"nodes": nodes},
                "template": {
                    "spec": {
                        "containers": [
                            _container("engine", rank=worker_rank),
                            _container("agent", rank=worker_rank),
                        ]
                    }
                },
            },
        ],
    }


def _workload(stack: str, copies: int = 2, nodes: int = 2) -> dict[str, Any]:
    composed = compose_replica(replica([_engine(stack, copies, nodes)]), cluster(stack))
    return manifests(composed)["model-serving-big"]


@pytest.mark.parametrize(("stack", "grove"), STACKS)
@pytest.mark.parametrize(("copies", "nodes"), [(1, 1), (3, 2)])
def test_every_reference_resolves_to_the_real_leader(
    stack: str, grove: Any, copies: int, nodes: int
) -> None:
    running = list(gangs(_workload(stack, copies, nodes), grove))
    assert len(running) == copies
    for index, gang in enumerate(running):
        leader = gang[0]
        assert len(gang) == 1 + nodes
        for rank, pod in enumerate(gang):
            for container in pod.containers:
                argv, missing = kubelet_argv(pod, container)
                assert missing == []
                env, _ = kubelet_env(pod, container)
                assert env["MODELPLANE_LEADER_ADDRESS"] == leader.dns_name
                assert env["LEADER"] == f"tcp://{leader.dns_name}:29500"
                assert f"--master-addr={leader.dns_name}" in argv
                assert f"--copy={index}" in argv
                if stack == "Standard" or rank == 0:
                    assert env["MODELPLANE_RANK"] == str(rank)
                    assert f"--node-rank={rank}" in argv
                else:
                    assert "MODELPLANE_RANK" not in env


@pytest.mark.parametrize(("stack", "grove"), STACKS)
def test_no_injected_value_names_an_operator_variable(stack: str, grove: Any) -> None:
    # The mechanism: Modelplane's own entries refer only to Modelplane entries placed
    # before them, so the operator's order cannot matter.
    for gang in gangs(_workload(stack), grove):
        for pod in gang:
            for container in pod.containers:
                ours = [e for e in container["env"] if e["name"].startswith("MODELPLANE_")]
                seen: set[str] = set()
                for entry in ours:
                    for name in references(entry.get("value", "")):
                        assert name.startswith("MODELPLANE_") and name in seen, entry
                    seen.add(entry["name"])


def test_the_simulation_catches_an_operator_variable_in_an_env_value() -> None:
    # The form the first specification used: it resolves on Grove main, stays literal on released
    # Grove.
    workload = _workload("Dynamo", copies=1, nodes=1)
    old = "$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-leader-0.$(GROVE_HEADLESS_SERVICE)"
    for clique in workload["spec"]["template"]["cliques"]:
        for c in clique["spec"]["podSpec"]["containers"]:
            c["env"] = [{"name": "ADDR", "value": old}]
            c["args"] = ["$(ADDR)"]
    released = _missing(workload, append)
    assert {(m.where, m.name) for m in released} == {
        ("env ADDR", "GROVE_PCSG_NAME"),
        ("env ADDR", "GROVE_PCSG_INDEX"),
        ("env ADDR", "GROVE_HEADLESS_SERVICE"),
    }
    assert _missing(workload, prepend) == []


def _missing(workload: dict[str, Any], grove: Any) -> list[Unresolved]:
    return [
        m
        for g in gangs(workload, grove)
        for p in g
        for c in p.containers
        for m in kubelet_argv(p, c)[1]
    ]


def test_a_dynamo_worker_rank_would_stay_literal() -> None:
    # Why placement refuses it (scheduling StackUnsupported): nothing defines the rank.
    workload = _workload("Dynamo", copies=1, nodes=1)
    worker_clique = workload["spec"]["template"]["cliques"][1]
    worker_clique["spec"]["podSpec"]["containers"][0]["args"] = ["--node-rank=$(MODELPLANE_RANK)"]
    for grove in (append, prepend):
        (gang,) = gangs(workload, grove)
        argv, missing = kubelet_argv(gang[1], gang[1].containers[0])
        assert [m.name for m in missing] == ["MODELPLANE_RANK"]
        assert argv == ["--node-rank=$(MODELPLANE_RANK)"]


REFERENCES = ["MODELPLANE_LEADER_ADDRESS", "MODELPLANE_GANG_INDEX", "MODELPLANE_SERVED_MODEL_NAME"]


@settings(max_examples=40, deadline=None)
@given(
    stack=st.sampled_from(["lws", "grove-released", "grove-main"]),
    copies=st.integers(1, 3),
    nodes=st.integers(1, 3),
    names=st.lists(st.sampled_from(REFERENCES), min_size=1, max_size=4),
)
def test_any_user_env_that_names_our_variables_resolves_on_every_operator(
    stack: str, copies: int, nodes: int, names: list[str]
) -> None:
    # Whatever the user writes, wherever in their env list, and whichever way the
    # operator orders its own variables: our variables are always defined earlier.
    kind, grove = {
        "lws": ("Standard", append),
        "grove-released": ("Dynamo", append),
        "grove-main": ("Dynamo", prepend),
    }[stack]
    engine = _engine(kind, copies, nodes)
    for member in engine["members"]:
        for container in member["template"]["spec"]["containers"]:
            container["env"] = [
                {"name": f"U{i}", "value": f"x-$({name})"} for i, name in enumerate(names)
            ]
    workload = manifests(compose_replica(replica([engine]), cluster(kind)))["model-serving-big"]
    for gang in gangs(workload, grove):
        for pod in gang:
            for container in pod.containers:
                env, missing = kubelet_env(pod, container)
                assert missing == []
                assert all("$(" not in env[f"U{i}"] for i in range(len(names)))
