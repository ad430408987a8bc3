"""Ready means rolled out (docs/composition.md, "Ready means rolled out").

Each composed workload's readiness query is run, with the project's CEL engine in the
environment provider-kubernetes v1.2.1 uses (``object`` bound to the observed object after
a JSON round trip, so numbers are doubles), on statuses shaped like the controller's at each
step of a create and of an in-place update. Only the last step of each, "done", may read
Ready. Each status is first checked against the released schema of its kind.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from modelplane.composition import compose_replica
from modelplane.composition.delivery import readiness
from tests.composition.readiness import compile_readiness

from .builders import cluster, gang_engine, manifests, replica, standalone_engine
from .schemas import validate_manifest

Json = dict[str, Any]
Step = tuple[str, int, Json | None]  # name, metadata.generation, status (None: not yet written)


def _cond(type_: str, status: str, reason: str, generation: int | None = None) -> Json:
    out: Json = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def _deployment_available(status: str) -> Json:
    reason = "MinimumReplicasAvailable" if status == "True" else "MinimumReplicasUnavailable"
    cond = _cond("Available", status, reason)
    cond["lastUpdateTime"] = cond["lastTransitionTime"]
    return cond


def _deployment(
    gen: int, replicas: int, updated: int, ready: int, available: int, copies: int = 2
) -> Json:
    # Zero counts are omitted (omitempty). Available is minimum availability: with
    # maxUnavailable 1 it holds once available >= copies - 1, so at 0 of 1 too.
    status: Json = {"observedGeneration": gen}
    for field, value in (
        ("replicas", replicas),
        ("updatedReplicas", updated),
        ("readyReplicas", ready),
        ("availableReplicas", available),
    ):
        if value:
            status[field] = value
    status["conditions"] = [_deployment_available("True" if available >= copies - 1 else "False")]
    return status


DEPLOYMENT_STEPS: list[Step] = [
    ("created", 1, None),
    ("created, no pod available yet", 1, _deployment(1, 2, 2, 0, 0)),
    ("created, one of two available", 1, _deployment(1, 2, 2, 1, 1)),
    ("generation bumped, not observed", 2, _deployment(1, 2, 2, 2, 2)),
    ("observed, old pods remaining", 2, _deployment(2, 2, 1, 1, 1)),
    ("observed, a surged old pod remaining", 2, _deployment(2, 3, 2, 3, 3)),
    ("updated, not available", 2, _deployment(2, 2, 2, 1, 1)),
    ("done", 2, _deployment(2, 2, 2, 2, 2)),
]
"""A Deployment with ``copies: 2`` (kubernetes/api v0.34.10 ``apps/v1/types.go``
``DeploymentStatus``; kubernetes/kubectl kubernetes-1.34.10
``pkg/polymorphichelpers/rollout_status.go`` ``DeploymentStatusViewer.Status`` is the
done test)."""

ONE_COPY_STEPS: list[Step] = [
    ("created, pod loading, Available=True", 1, _deployment(1, 1, 1, 0, 0, copies=1)),
    ("updated in place, pod loading, Available=True", 2, _deployment(2, 1, 1, 0, 0, copies=1)),
    ("done", 2, _deployment(2, 1, 1, 1, 1, copies=1)),
]
"""A one-copy engine Deployment (``maxSurge: 0, maxUnavailable: 1``): Available reads True
with no pod ready, since ``availableReplicas >= replicas - maxUnavailable`` holds at 0
(kubernetes ``pkg/controller/deployment/sync.go`` ``calculateStatus``)."""


def _lws(observed: int, replicas: int, ready: int, updated: int, conds: list[Json]) -> Json:
    status: Json = {"observedGeneration": observed, "conditions": conds}
    for field, value in (("replicas", replicas), ("readyReplicas", ready)):
        if value:
            status[field] = value
    if updated:
        status["updatedReplicas"] = updated
    return status


def _lws_conds(gen: int, available: bool, updating: bool = False) -> list[Json]:
    # setConditions rewrites every condition's observedGeneration to the generation it ran at.
    conds = [
        _cond("Available", "True" if available else "False", "AllGroupsReady", gen),
        _cond("Progressing", "False" if available else "True", "GroupsProgressing", gen),
    ]
    if updating:
        conds.append(_cond("UpdateInProgress", "True", "GroupsUpdating", gen))
    return conds


LWS_STEPS: list[Step] = [
    ("created", 1, None),
    ("created, groups starting", 1, _lws(1, 2, 0, 2, _lws_conds(1, False))),
    ("generation bumped, old Available=True", 2, _lws(1, 2, 2, 2, _lws_conds(1, True))),
    ("observed, no group updated", 2, _lws(2, 2, 2, 0, _lws_conds(2, False, True))),
    ("observed, an old group remaining", 2, _lws(2, 2, 2, 1, _lws_conds(2, False, True))),
    ("updated, a group not ready", 2, _lws(2, 2, 1, 2, _lws_conds(2, False))),
    ("a surge group left over", 2, _lws(2, 3, 3, 3, _lws_conds(2, True))),
    ("done", 2, _lws(2, 2, 2, 2, _lws_conds(2, True))),
]
"""A LeaderWorkerSet with ``copies: 2`` (kubernetes-sigs/lws v0.10.0
``api/leaderworkerset/v1/leaderworkerset_types.go`` ``LeaderWorkerSetStatus``;
``pkg/controllers/leaderworkerset_controller.go`` ``updateStatus``, ``updateConditions``:
ready and updated counts include surge groups)."""


def _pcs(observed: int, available: int, updated: int, progress: Json | None = None) -> Json:
    # replicas is copied from spec, never observed; availableReplicas counts old pods too.
    status: Json = {
        "observedGeneration": observed,
        "replicas": 1,
        "availableReplicas": available,
        "updatedReplicas": updated,
        "currentGenerationHash": "h2" if observed == 2 else "h1",
    }
    if progress is not None:
        status["updateProgress"] = progress
    return status


_STARTED = {"updateStartedAt": "2026-01-01T00:00:00Z", "totalPodCliquesCount": 2}
_ENDED = {**_STARTED, "updateEndedAt": "2026-01-01T00:10:00Z", "updatedPodCliquesCount": 2}

GROVE_STEPS: list[Step] = [
    ("created", 1, None),
    ("created, cliques starting", 1, _pcs(1, 0, 0)),
    ("generation bumped, not observed", 2, _pcs(1, 1, 1, _ENDED)),
    ("observed, old pods available, none updated", 2, _pcs(2, 1, 0, _STARTED)),
    ("updated and available, update not ended", 2, _pcs(2, 1, 1, _STARTED)),
    ("done", 2, _pcs(2, 1, 1, _ENDED)),
]
"""A PodCliqueSet (ai-dynamo/grove v0.1.0-alpha.12-rc1
``operator/api/core/v1alpha1/podcliqueset.go`` ``PodCliqueSetStatus``, no Available
condition; ``operator/internal/controller/podcliqueset/reconcilestatus.go`` and
``reconcilespec.go``; ``components/podcliquesetreplica/rollingupdate.go`` sets
``updateEndedAt``)."""


def _workload(engine: Json, stack: str = "Standard") -> Json:
    composed = compose_replica(replica([engine]), cluster(stack))
    return manifests(composed)[f"model-serving-{engine['name']}"]


def _picker() -> Json:
    return manifests(compose_replica(replica(), cluster()))["epp"]


WORKLOADS = {
    "engine Deployment": lambda: _workload(standalone_engine(copies=2)),
    "one-copy engine Deployment": lambda: _workload(standalone_engine()),
    "picker Deployment": _picker,
    "LeaderWorkerSet": lambda: _workload(gang_engine(copies=2)),
    "PodCliqueSet": lambda: _workload(gang_engine(copies=2), "Dynamo"),
}

CASES = [
    *(("engine Deployment", *s) for s in DEPLOYMENT_STEPS),
    *(("one-copy engine Deployment", *s) for s in ONE_COPY_STEPS),
    *(("LeaderWorkerSet", *s) for s in LWS_STEPS),
    *(("PodCliqueSet", *s) for s in GROVE_STEPS),
]


def _observed(manifest: Json, generation: int, status: Json | None) -> Json:
    """The live object as the API server returns it."""
    obj = copy.deepcopy(manifest)
    obj["metadata"].update(generation=generation, uid="u-1", resourceVersion="7")
    if status is not None:
        obj["status"] = status
    return obj


def _as_provider_sees_it(obj: Json) -> Json:
    """provider-kubernetes round-trips the object through JSON into ``map[string]any``."""
    return json.loads(json.dumps(obj), parse_int=float)


def _ready(manifest: Json, obj: Json) -> bool:
    query = readiness(manifest)
    assert query["policy"] == "DeriveFromCelQuery"
    return compile_readiness(query["celQuery"]).ready(_as_provider_sees_it(obj))


@pytest.mark.parametrize(("workload", "step", "generation", "status"), CASES)
def test_only_a_finished_rollout_reads_ready(
    workload: str, step: str, generation: int, status: Json | None
) -> None:
    manifest = WORKLOADS[workload]()
    obj = _observed(manifest, generation, status)
    validate_manifest(obj)  # the status is one the released schema admits
    assert _ready(manifest, obj) is (step == "done"), f"{workload}: {step}"


PICKER_STEPS: list[tuple[str, int, Json | None, bool]] = [
    ("created", 1, None, False),
    ("created, no picker available yet", 1, _deployment(1, 2, 2, 0, 0), False),
    ("created, one of two available", 1, _deployment(1, 2, 2, 1, 1), True),
    ("both available", 1, _deployment(1, 2, 2, 2, 2), True),
    ("a drain evicted one, its replacement starting", 1, _deployment(1, 2, 2, 1, 1), True),
    ("config changed, not observed", 2, _deployment(1, 2, 2, 2, 2), False),
    ("rolling: one old gone, one surged, one old serving", 2, _deployment(2, 2, 1, 1, 1), False),
    ("rolling: the surged picker ready beside the old", 2, _deployment(2, 2, 1, 2, 2), False),
    ("rolling: the last old picker gone, one new available", 2, _deployment(2, 2, 2, 1, 1), True),
    ("done", 2, _deployment(2, 2, 2, 2, 2), True),
    ("every picker lost", 2, _deployment(2, 2, 2, 0, 0), False),
]
"""The picker Deployment (two pickers, ``maxSurge: 1, maxUnavailable: 1``) through a create,
a drain and a config rollout. Its counts are of non-terminating pods (kubernetes/api v0.34.10
``apps/v1/types.go`` ``DeploymentStatus``), so an old picker that is terminating is not
counted and one still running keeps ``updatedReplicas`` below ``spec.replicas``; one
available picker serves the replica (docs/composition.md, "Two pickers per replica")."""


def _picker_ready(generation: int, status: Json | None) -> bool:
    manifest = _picker()
    obj = _observed(manifest, generation, status)
    validate_manifest(obj)
    delivered = next(
        o.object for o in compose_replica(replica(), cluster()).objects if o.key == "epp"
    )
    query = delivered["spec"]["readiness"]
    assert query == readiness(manifest, "epp")
    return compile_readiness(query["celQuery"]).ready(_as_provider_sees_it(obj))


@pytest.mark.parametrize(("step", "generation", "status", "ready"), PICKER_STEPS)
def test_the_picker_is_ready_with_one_available_picker_at_the_current_template(
    step: str, generation: int, status: Json | None, ready: bool
) -> None:
    assert _picker_ready(generation, status) is ready, step


def test_only_the_picker_deployment_reads_one_available_picker_as_ready() -> None:
    # An engine Deployment with one of two copies available is not rolled out: the
    # picker's query is the picker's, by its resource key, never the kind's.
    engine = WORKLOADS["engine Deployment"]()
    half = _observed(engine, 1, _deployment(1, 2, 2, 1, 1))
    assert _ready(engine, half) is False
    assert readiness(engine, "epp") != readiness(engine)
    assert readiness(_picker())["celQuery"] == readiness(engine)["celQuery"]


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_each_query_is_one_provider_kubernetes_accepts(workload: str) -> None:
    """The query type-checks as bool with ``object`` of any type, and a missing status
    (or a missing field) reads not Ready rather than failing."""
    manifest = WORKLOADS[workload]()
    assert _ready(manifest, _observed(manifest, 1, None)) is False
    assert _ready(manifest, _observed(manifest, 1, {})) is False


def test_the_one_copy_engine_never_surges_and_so_ignores_available() -> None:
    """With devices reserved for exactly ``copies`` pods, the strategy cannot surge; one
    copy may be unavailable, which makes Available=True meaningless at one copy."""
    manifest = WORKLOADS["one-copy engine Deployment"]()
    assert manifest["spec"]["replicas"] == 1
    assert manifest["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
    }
    assert "Available" not in readiness(manifest)["celQuery"]
