"""The TTL of each answer, decided by what the function found (docs/crossplane.md, "Answers that
stay true longer"): a replica stamped by its deployment, a settled deployment, a quiet
cluster. Each case runs Crossplane's loop over gRPC and reads ``meta.ttl`` off the wire.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest

from modelplane.naming import TEMPLATE_HASH_LABEL, replica_name
from modelplane.runtime.crossplane.freshness import (
    EDITED_TTL,
    LONG_TTL,
    QUIET_TTL,
    SETTLED_TTL,
    SHORT_TTL,
    State,
    ttl_for,
)

from .conftest import Stubs
from .helpers import (
    composite_status,
    deployment,
    existing_cluster,
    inference_class,
    ready_cluster,
    ready_status,
    replica,
    request,
    satisfy,
    stamped,
)

CLASS = inference_class()
CLUSTER = ready_cluster("us-east-1")


def _loop(stubs: Stubs, xr: dict[str, Any], world: list[dict[str, Any]], **kw: Any) -> Any:
    """Crossplane's loop without static requirements: call, fetch what was asked, call again."""
    first = stubs.v1.RunFunction(request(xr, **kw))
    if not first.requirements.resources:
        return first
    return stubs.v1.RunFunction(request(xr, required=satisfy(first, world), **kw))


def _ours(count: int, ready: bool) -> dict[str, dict[str, Any]]:
    return {
        f"replica-us-east-1-{i}": replica(
            name=replica_name("qwen3-8b", "us-east-1", i), index=i, ready=ready
        )
        for i in range(count)
    }


def _not_ready(cluster: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(cluster)
    out["status"]["conditions"][0].update(status="False", reason="Unavailable")
    return out


def _outdated(count: int) -> dict[str, dict[str, Any]]:
    """Ready replicas written from an older template."""
    out = _ours(count, True)
    for obj in out.values():
        obj["metadata"]["labels"][TEMPLATE_HASH_LABEL] = "0000000000"
    return out


def _parked() -> dict[str, Any]:
    xr = deployment()
    xr["spec"]["replicas"] = 0
    return xr


# (deployment, its fleet, its observed replicas, the state its answer is in)
DEPLOYMENTS = [
    pytest.param(deployment(), [CLUSTER, CLASS], {}, State.DEFAULT, id="placing anew"),
    pytest.param(
        deployment(), [CLUSTER, CLASS], _ours(2, True), State.SETTLED, id="all Ready: settled"
    ),
    pytest.param(
        deployment(), [CLUSTER, CLASS], _ours(2, False), State.DEFAULT, id="replicas starting"
    ),
    pytest.param(
        deployment(replicas=3),
        [CLUSTER, CLASS],
        _ours(2, True),
        State.DEFAULT,
        id="one more desired",
    ),
    pytest.param(deployment(), [CLUSTER, CLASS], _outdated(2), State.DEFAULT, id="rolling out"),
    pytest.param(
        deployment(),
        [_not_ready(CLUSTER), CLASS],
        _ours(2, True),
        State.DEFAULT,
        id="its cluster not Ready",
    ),
    pytest.param(_parked(), [], {}, State.SETTLED, id="parked"),
]


@pytest.mark.parametrize(("xr", "world", "observed", "state"), DEPLOYMENTS)
def test_a_deployment_answers_longer_once_settled(
    stubs: Stubs,
    xr: dict[str, Any],
    world: list[dict[str, Any]],
    observed: dict[str, dict[str, Any]],
    state: State,
) -> None:
    rsp = _loop(stubs, xr, world, observed=observed)
    assert rsp.meta.ttl.ToTimedelta() == ttl_for("ModelDeployment", state)
    assert rsp.meta.ttl.ToTimedelta() == (SETTLED_TTL if state is State.SETTLED else SHORT_TTL)


def test_a_deployment_fetching_its_clusters_answers_short(stubs: Stubs) -> None:
    # Its first call, nothing fetched: requirements alone, the default TTL.
    rsp = stubs.v1.RunFunction(request(deployment(), observed=_ours(2, True)))
    assert rsp.meta.ttl.ToTimedelta() == SHORT_TTL


def _pinned(ready: bool | None) -> dict[str, Any]:
    return replica(name=replica_name("qwen3-8b", "us-east-1", 0), ready=ready)


def _published(world: list[dict[str, Any]]) -> Callable[[Stubs], dict[str, Any]]:
    """The cluster with the occupancy its function publishes for ``world``'s replicas."""

    def build(stubs: Stubs) -> dict[str, Any]:
        cluster = existing_cluster(status=ready_status("us-east-1"))
        rsp = _loop(stubs, cluster, [CLASS, *world])
        cluster["status"]["occupancy"] = composite_status(rsp)["occupancy"]
        return cluster

    return build


# (the cluster as observed, the replicas labelled for it now, the state its answer is in)
CLUSTERS = [
    pytest.param(_published([]), [], State.QUIET, id="nothing pinned, published"),
    pytest.param(_published([_pinned(True)]), [_pinned(True)], State.QUIET, id="Ready, published"),
    pytest.param(
        _published([_pinned(False)]), [_pinned(False)], State.DEFAULT, id="a replica starting"
    ),
    pytest.param(_published([]), [_pinned(True)], State.DEFAULT, id="a replica not published"),
    pytest.param(_published([_pinned(True)]), [], State.DEFAULT, id="a published replica gone"),
]


@pytest.mark.parametrize(("cluster", "pinned", "state"), CLUSTERS)
def test_a_cluster_answers_longer_once_quiet(
    stubs: Stubs,
    cluster: Callable[[Stubs], dict[str, Any]],
    pinned: list[dict[str, Any]],
    state: State,
) -> None:
    rsp = _loop(stubs, cluster(stubs), [CLASS, *pinned])
    assert rsp.meta.ttl.ToTimedelta() == ttl_for("InferenceCluster", state)
    assert rsp.meta.ttl.ToTimedelta() == (QUIET_TTL if state is State.QUIET else SHORT_TTL)


@pytest.mark.parametrize(
    ("xr", "ttl", "calls"),
    [
        pytest.param(replica(), EDITED_TTL, 2, id="unstamped: requires its cluster"),
        pytest.param(stamped(replica(), CLUSTER), LONG_TTL, 1, id="stamped: reads its spec"),
    ],
)
def test_a_stamped_replica_answers_in_one_call_with_the_long_ttl(
    stubs: Stubs, xr: dict[str, Any], ttl: datetime.timedelta, calls: int
) -> None:
    first = stubs.v1.RunFunction(request(xr))
    made = 1 if not first.requirements.resources else 2
    rsp = _loop(stubs, xr, [CLUSTER])
    assert made == calls
    assert rsp.meta.ttl.ToTimedelta() == ttl
    assert isinstance(rsp, fnv1.RunFunctionResponse)
    assert len(rsp.desired.resources) > 0
