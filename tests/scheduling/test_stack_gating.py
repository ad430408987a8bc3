"""A cluster whose serving stack is not ready takes no new replica and keeps its running ones
(docs/scheduling.md, "Cluster checks"; docs/reconcile.md, "`ReplicasReady` says every loss").

``status.stack`` is what the InferenceCluster function publishes: a Managed stack is
``Ready``, ``Installing`` or ``Failed``; a Provided one ``RequirementsMet`` or
``RequirementsNotMet``. Only ``Ready`` and ``RequirementsMet`` take new replicas; a
cluster without ``status.stack`` (never published, or a render input) is not held back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api import InferenceCluster, ModelReplica
from modelplane.api.inferencecluster import ComponentPhase, StackPhase
from modelplane.cli.main import main
from modelplane.scheduling import CACHE_NONE, Schedule, identity, schedule
from modelplane.scheduling.model import LossCause
from tests.builders import stack_component, stack_status

from .builders import cluster, deployment, engine, gpu, member, pool, replica
from .test_cli import write

LWS_INSTALLING = stack_component("lws", "v0.10.0", "Installing")
DRA_WAITING = stack_component("nvidia-dra-driver", "25.12.0", "Waiting")
LWS_READY = stack_component("lws", "v0.10.0", "Ready")
LWS_MISSING = stack_component("lws", "v0.10.0", "Missing", "CRD leaderworkersets.x-k8s.io absent")
LWS_PROVIDED = stack_component("lws", "v0.10.0", "Provided")


def h100(published: dict[str, Any] | None, **kw: Any) -> InferenceCluster:
    """c1, one node of 8 H100s, publishing ``published`` as its ``status.stack``."""
    return cluster("c1", pool("h100", 1, gpu()), stack_status=published, **kw)


def running(index: int = 0, ready: bool = True) -> ModelReplica:
    """An observed replica of ``chat`` on c1 (pool h100, one GPU)."""
    return replica("chat", "c1", index, ready=ready)


def run(clusters: list[InferenceCluster], observed: list[ModelReplica], n: int = 2) -> Schedule:
    return schedule(deployment("chat", n), clusters, [], CACHE_NONE, observed)


def explained(s: Schedule) -> dict[str, tuple[str, str]]:
    return {e.cluster: (e.reason, e.message) for e in s.explain}


# case, status.stack, reason for c1 (None: it takes the new replica), message, notice cause
CASES: list[tuple[str, dict[str, Any] | None, str | None, str, LossCause | None]] = [
    (
        "Managed, Installing",
        stack_status("Installing", LWS_INSTALLING, DRA_WAITING),
        "StackNotReady",
        "serving stack Installing: lws v0.10.0 Installing, nvidia-dra-driver 25.12.0 Waiting",
        LossCause.STACK_NOT_READY,
    ),
    (
        "Managed, Failed",
        stack_status(
            "Failed",
            stack_component("lws", "v0.10.0", "Failed", "helm: timed out\nwaiting for pods"),
            stack_component("nvidia-dra-driver", "25.12.0", "Ready"),
        ),
        "StackNotReady",
        "serving stack Failed: lws v0.10.0 Failed (helm: timed out waiting for pods)",
        LossCause.STACK_NOT_READY,
    ),
    (
        "Provided, RequirementsNotMet",
        stack_status("RequirementsNotMet", LWS_MISSING, LWS_PROVIDED | {"name": "grove"}),
        "RequirementsNotMet",
        "requirements not met: lws v0.10.0 Missing (CRD leaderworkersets.x-k8s.io absent)",
        LossCause.REQUIREMENTS_NOT_MET,
    ),
    ("Managed, Ready", stack_status("Ready", LWS_READY), None, "", None),
    ("Provided, RequirementsMet", stack_status("RequirementsMet", LWS_PROVIDED), None, "", None),
    ("no status.stack", None, None, "", None),
]


@pytest.mark.parametrize(
    ("stack", "reason", "message", "cause"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_a_not_ready_stack_gets_no_new_replica_and_keeps_the_running_one(
    stack: dict[str, Any] | None, reason: str | None, message: str, cause: LossCause | None
) -> None:
    s = run([h100(stack)], [running()])
    placed = [(p.cluster, p.index, p.retained) for p in s.replicas]
    if reason is None:
        assert placed == [("c1", 0, True), ("c1", 1, False)]
        assert s.notices == ()
        assert s.shortfall is None
        return
    assert placed == [("c1", 0, True)]
    assert explained(s) == {"c1": (reason, message)}
    assert s.shortfall is not None and s.shortfall.reason == reason
    assert s.shortfall.message() == f"0/1 clusters available: 1 {reason}"
    (notice,) = s.notices
    assert (notice.cluster, notice.cause, notice.replicas) == ("c1", cause, ("chat-c1-0",))
    assert not notice.cause.removed
    assert notice.detail == (stack or {})["phase"]


def test_the_stack_is_checked_after_the_dynamo_check_and_before_readiness() -> None:
    installing = stack_status("Installing", LWS_INSTALLING)
    not_ready = h100(installing, ready="False", gateway=None)
    assert explained(run([not_ready], []))["c1"][0] == "StackNotReady"
    rank = engine("chat", member("Worker", args=["--rank=$(MODELPLANE_RANK)"], worker_nodes=1))
    dynamo = h100(installing, stack="Dynamo")
    s = schedule(deployment("chat", 1, rank), [dynamo], [], CACHE_NONE, [])
    assert explained(s)["c1"][0] == "StackUnsupported"


def test_other_clusters_still_take_the_new_replicas() -> None:
    installing = h100(stack_status("Installing", LWS_INSTALLING))
    ready = cluster("c2", pool("h100", 1, gpu()), stack_status=stack_status("Ready", LWS_READY))
    s = run([installing, ready], [running()], n=3)
    assert [(p.cluster, p.index) for p in s.replicas] == [("c1", 0), ("c2", 0), ("c2", 1)]
    assert explained(s) == {
        "c1": ("StackNotReady", "serving stack Installing: lws v0.10.0 Installing")
    }


def test_the_message_stays_one_bounded_line() -> None:
    items = [
        stack_component(f"component-{i}", "1.0.0", "Missing", "x" * 1000 + "\nsecond line")
        for i in range(7)
    ]
    message = explained(run([h100(stack_status("RequirementsNotMet", *items))], []))["c1"][1]
    assert "\n" not in message
    assert message.startswith("requirements not met: component-0 1.0.0 Missing (xxx")
    assert message.endswith("...) and 4 more")
    assert message.count("component-") == 3
    assert len(message) < 700


def test_a_phase_not_yet_verified_says_so() -> None:
    # A Provided stack in any phase but RequirementsMet is not ready (a Managed-only phase
    # stands in for one being verified).
    stack = stack_status("Installing", LWS_PROVIDED, components="Provided")
    assert explained(run([h100(stack)], []))["c1"] == (
        "RequirementsNotMet",
        "requirements not verified yet (Installing)",
    )


READY_PHASES = {"Ready", "RequirementsMet"}


@settings(max_examples=200, deadline=None)
@given(
    phase=st.sampled_from(get_args(StackPhase)),
    components=st.sampled_from(["Managed", "Provided"]),
    item_phases=st.lists(st.sampled_from(get_args(ComponentPhase)), max_size=4),
    cluster_ready=st.booleans(),
    gateway=st.booleans(),
    ready=st.lists(st.booleans(), min_size=1, max_size=3),
    extra=st.integers(min_value=0, max_value=2),
)
def test_no_stack_phase_removes_an_observed_replica(
    phase: str,
    components: str,
    item_phases: list[str],
    cluster_ready: bool,
    gateway: bool,
    ready: list[bool],
    extra: int,
) -> None:
    items = [stack_component(f"c{i}", "1.0.0", p) for i, p in enumerate(item_phases)]
    c1 = cluster(
        "c1",
        pool("h100", 2, gpu()),
        ready="True" if cluster_ready else "False",
        gateway="203.0.113.1" if gateway else None,
        stack_status=stack_status(phase, *items, components=components),
    )
    observed = [running(i, r) for i, r in enumerate(ready)]
    s = run([c1], observed, n=len(observed) + extra)
    kept = {(p.cluster, p.index) for p in s.replicas}
    assert {identity(r) for r in observed} <= kept
    assert not any(n.cause.removed for n in s.notices)
    takes_new = phase in READY_PHASES and cluster_ready and gateway
    if not takes_new:
        assert len(s.replicas) == len(observed)
    if phase not in READY_PHASES:
        (notice,) = s.notices
        provided = components == "Provided"
        assert notice.cause is (
            LossCause.REQUIREMENTS_NOT_MET if provided else LossCause.STACK_NOT_READY
        )
        assert notice.withdrawn is not gateway
        assert explained(s)["c1"][0] == ("RequirementsNotMet" if provided else "StackNotReady")


def test_schedule_explain_prints_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        tmp_path / "all.yaml",
        h100(stack_status("Installing", LWS_INSTALLING, DRA_WAITING)),
        cluster("c2", pool("h100", 1, gpu()), stack_status=stack_status("RequirementsNotMet",
                LWS_MISSING)),
        deployment("chat", 1),
    )  # fmt: skip
    assert main(["schedule", str(tmp_path), "-o", "json", "--explain"]) == 0
    (dep,) = json.loads(capsys.readouterr().out)["deployments"]
    assert dep["replicas"] == []
    assert dep["explain"] == [
        {
            "cluster": "c1",
            "reason": "StackNotReady",
            "message": "serving stack Installing: lws v0.10.0 Installing, "
            "nvidia-dra-driver 25.12.0 Waiting",
        },
        {
            "cluster": "c2",
            "reason": "RequirementsNotMet",
            "message": "requirements not met: lws v0.10.0 Missing "
            "(CRD leaderworkersets.x-k8s.io absent)",
        },
    ]
    scheduled = dep["conditions"][0]
    assert (scheduled["type"], scheduled["status"], scheduled["reason"]) == (
        "ReplicasScheduled",
        "False",
        "RequirementsNotMet",
    )
    assert scheduled["message"].endswith(
        "0/2 clusters available: 1 RequirementsNotMet, 1 StackNotReady"
    )
    assert main(["schedule", str(tmp_path), "--explain"]) == 0
    table = capsys.readouterr().out
    assert "c1  StackNotReady       serving stack Installing: lws v0.10.0 Installing" in table
    assert "c2  RequirementsNotMet  requirements not met: lws v0.10.0 Missing" in table
