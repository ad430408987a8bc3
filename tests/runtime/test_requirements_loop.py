"""Crossplane's requirements loop and each kind's TTL (docs/crossplane.md, "Reconciles driven by
change" and "One call per reconcile").

``crossplane_loop`` follows Crossplane v2.3.4 ``internal/xfn/required_resources.go``
(``FetchingFunctionRunner.RunFunction``): the step's static requirements are fetched before
the first call, the function is called again while its requirements differ from the
previous call's (none before the first), each call gets the previous answer's context, and
only the last answer is kept.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest
import yaml
from google.protobuf import json_format

from modelplane.packaging import compose_step
from modelplane.runtime.crossplane.dispatch import HANDLERS, REQUIREMENTS
from modelplane.runtime.crossplane.freshness import (
    EDITED_TTL,
    LONG_TTL,
    QUIET_TTL,
    READS,
    SETTLED_TTL,
    SHORT_TTL,
    Change,
    State,
    ttl_for,
)
from modelplane.runtime.crossplane.server import run_bytes
from tests.paths import REPO

from .helpers import (
    as_struct,
    composite_status,
    deployment,
    desired,
    existing_cluster,
    inference_class,
    model_cache,
    ready_cluster,
    replica,
    request,
    satisfy,
    stamped,
)

WORLD: list[dict[str, Any]] = [ready_cluster("us-east-1"), inference_class(), model_cache()]
MAX_ITERATIONS = 5  # Crossplane v2.3.4 MaxRequirementsIterations


def _call(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    return fnv1.RunFunctionResponse.FromString(run_bytes(req.SerializeToString()))


def _fetch(selectors: Mapping[str, Any], world: Sequence[dict[str, Any]]) -> dict[str, Any]:
    probe = fnv1.RunFunctionResponse()
    for key, selector in selectors.items():
        probe.requirements.resources[key].CopyFrom(selector)
    return satisfy(probe, world)


def _bootstrap(step: Mapping[str, Any]) -> dict[str, fnv1.ResourceSelector]:
    """The step's ``requirements.requiredResources`` as the selectors Crossplane fetches."""
    selectors: dict[str, fnv1.ResourceSelector] = {}
    for entry in step.get("requirements", {}).get("requiredResources", []):
        selector = fnv1.ResourceSelector(api_version=entry["apiVersion"], kind=entry["kind"])
        if "name" in entry:
            selector.match_name = entry["name"]
        else:
            selector.match_labels.SetInParent()
            for label, value in entry.get("matchLabels", {}).items():
                selector.match_labels.labels[label] = value
        if "namespace" in entry:
            selector.namespace = entry["namespace"]
        selectors[entry["requirementName"]] = selector
    return selectors


def crossplane_loop(
    xr: dict[str, Any],
    world: Sequence[dict[str, Any]],
    step: Mapping[str, Any],
    observed: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[fnv1.RunFunctionResponse, int]:
    """The answer Crossplane keeps for one reconcile, and how many calls it took."""
    bootstrap = _fetch(_bootstrap(step), world)
    req = request(xr, observed=observed, required=bootstrap)
    if "input" in step:
        req.input.CopyFrom(as_struct(step["input"]))
    previous: fnv1.Requirements | None = None
    for calls in range(1, MAX_ITERATIONS + 2):
        rsp = _call(req)
        if any(r.severity == fnv1.SEVERITY_FATAL for r in rsp.results):
            return rsp, calls
        now = rsp.requirements if rsp.HasField("requirements") else None
        if now == previous:
            return rsp, calls
        previous = now
        fetched = {**bootstrap, **_fetch(dict(now.resources) if now else {}, world)}
        context = rsp.context
        req = request(xr, observed=observed, required=fetched)
        req.context.CopyFrom(context)
        if "input" in step:
            req.input.CopyFrom(as_struct(step["input"]))
    raise AssertionError("requirements did not stabilize")


def _package_step(kind_plural: str) -> dict[str, Any]:
    path = REPO / "package" / "configuration" / "apis" / kind_plural / "composition.yaml"
    [step] = yaml.safe_load(path.read_text())["spec"]["pipeline"]
    return step  # type: ignore[no-any-return]


def _parked() -> dict[str, Any]:
    xr = deployment()
    xr["spec"]["replicas"] = 0
    return xr


def _cache(auth: bool) -> dict[str, Any]:
    xr = model_cache()
    if auth:
        xr["spec"]["huggingFace"]["authSecret"] = {"name": "hf-token"}
    return xr


# (composite, its Composition's step, calls per reconcile)
LOOPS = [
    pytest.param(deployment(), "ModelDeployment", 1, id="deployment: static only"),
    pytest.param(deployment(cache="qwen"), "ModelDeployment", 2, id="deployment: its cache"),
    pytest.param(_parked(), "ModelDeployment", 1, id="deployment: parked"),
    pytest.param(_cache(auth=False), "ModelCache", 1, id="cache: static only"),
    pytest.param(_cache(auth=True), "ModelCache", 1, id="cache: authSecret asks for nothing"),
    pytest.param(replica(), "ModelReplica", 2, id="replica: its cluster"),
    pytest.param(
        stamped(replica(), ready_cluster("us-east-1")),
        "ModelReplica",
        1,
        id="replica: stamped, nothing",
    ),
    pytest.param(existing_cluster(), "InferenceCluster", 2, id="cluster: classes, replicas"),
    pytest.param(inference_class(), "InferenceClass", 1, id="class: nothing"),
]


@pytest.mark.parametrize(("xr", "kind", "calls"), LOOPS)
def test_calls_per_reconcile_with_the_packaged_compositions(
    xr: dict[str, Any], kind: str, calls: int
) -> None:
    rsp, made = crossplane_loop(xr, WORLD, compose_step(kind))
    assert made == calls


@pytest.mark.parametrize(("xr", "kind", "calls"), LOOPS)
def test_the_kept_answer_does_not_depend_on_the_static_requirements(
    xr: dict[str, Any], kind: str, calls: int
) -> None:
    # A Composition without static requirements (an older package) costs a call more
    # where the kind requires anything, and Crossplane keeps the same answer.
    bare = {"step": "compose", "functionRef": {"name": "f"}}
    packaged, _ = crossplane_loop(xr, WORLD, compose_step(kind))
    plain, made = crossplane_loop(xr, WORLD, bare)
    assert made == (2 if kind in REQUIREMENTS and REQUIREMENTS[kind](xr) else 1)
    assert desired(plain) == desired(packaged)
    assert composite_status(plain) == composite_status(packaged)
    assert json_format.MessageToDict(plain.desired) == json_format.MessageToDict(packaged.desired)


def test_a_first_call_missing_a_requirement_composes_nothing() -> None:
    # Crossplane discards it: only the requirements are worth sending.
    rsp = _call(request(deployment(), observed={"replica-x": replica()}))
    assert set(rsp.requirements.resources) == {"clusters", "classes"}
    assert desired(rsp) == {}
    assert list(rsp.conditions) == [] and list(rsp.results) == []


def test_the_packaged_step_is_what_packaging_builds() -> None:
    for plural, kind in [
        ("modeldeployments", "ModelDeployment"),
        ("modelcaches", "ModelCache"),
        ("modelservices", "ModelService"),
    ]:
        assert _package_step(plural) == compose_step(kind)


@pytest.mark.parametrize(
    ("kind", "state", "ttl"),
    [
        ("InferenceClass", State.DEFAULT, LONG_TTL),
        ("ModelEndpoint", State.DEFAULT, LONG_TTL),
        ("InferenceGateway", State.DEFAULT, SHORT_TTL),
        ("ModelReplica", State.DEFAULT, EDITED_TTL),
        ("ModelReplica", State.STAMPED, LONG_TTL),
        ("InferenceCluster", State.DEFAULT, SHORT_TTL),
        ("InferenceCluster", State.QUIET, QUIET_TTL),
        ("ModelDeployment", State.DEFAULT, SHORT_TTL),
        ("ModelDeployment", State.SETTLED, SETTLED_TTL),
        ("ModelCache", State.DEFAULT, SHORT_TTL),
        ("ModelService", State.DEFAULT, SHORT_TTL),
        ("Unknown", State.DEFAULT, SHORT_TTL),
        # A state a kind does not have reads as its default.
        ("ModelCache", State.SETTLED, SHORT_TTL),
    ],
)
def test_each_answer_gets_the_ttl_of_what_it_reads(
    kind: str, state: State, ttl: datetime.timedelta
) -> None:
    assert ttl_for(kind, state) == ttl


def test_every_served_kind_says_what_it_reads() -> None:
    assert set(READS) == set(HANDLERS)
    assert all(State.DEFAULT in rows for rows in READS.values())


# A composite of each kind in each of its states beyond the default: what it requires.
STATE_SAMPLES: dict[tuple[str, State], dict[str, Any]] = {
    ("ModelReplica", State.DEFAULT): replica(),
    ("ModelReplica", State.STAMPED): stamped(replica(), ready_cluster("us-east-1")),
    ("ModelDeployment", State.SETTLED): deployment(),
    ("InferenceCluster", State.QUIET): existing_cluster(),
}


def test_a_kind_that_requires_something_reads_something_unwatched() -> None:
    for kind in HANDLERS:
        unwatched = [r for r in READS[kind][State.DEFAULT] if r.change is not Change.WATCHED]
        assert bool(unwatched) == (kind in REQUIREMENTS), kind
    # In every state: a stamped replica requires nothing and reads nothing unwatched.
    states = {(kind, state) for kind, rows in READS.items() for state in rows}
    assert states - {(k, State.DEFAULT) for k in READS} <= set(STATE_SAMPLES)
    for (kind, state), xr in STATE_SAMPLES.items():
        unwatched = [r for r in READS[kind][state] if r.change is not Change.WATCHED]
        assert bool(unwatched) == bool(REQUIREMENTS[kind](xr)), (kind, state)


def test_the_ttl_is_on_the_wire() -> None:
    rsp = _call(request(inference_class()))
    assert rsp.meta.ttl.ToTimedelta() == LONG_TTL
    rsp = _call(request(replica(), required={"cluster": [ready_cluster("us-east-1")]}))
    assert rsp.meta.ttl.ToTimedelta() == EDITED_TTL
