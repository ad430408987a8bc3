"""Nothing repeated that did not change: remembered answers and bounded memos.

A deployment's or cache's whole answer is remembered by a digest of its request; the
answer from memory must be the answer computed afresh, byte for byte, for every request,
and a request that differs anywhere the function reads must not be answered from memory.
Under a long run of distinct requests every memo of the process stays within its bound.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest

from modelplane import memo
from modelplane.runtime.crossplane import documents, server, structs
from modelplane.runtime.crossplane.metrics import METRICS
from modelplane.runtime.crossplane.proto import request_from_proto, request_key
from modelplane.runtime.crossplane.server import run_bytes

from .helpers import (
    as_struct,
    deployment,
    inference_class,
    model_cache,
    ready_cluster,
    replica,
    request,
    satisfy,
)

WORLD = [ready_cluster("us-east-1"), ready_cluster("eu-west-1"), inference_class()]


def stats(name: str) -> memo.MemoStats:
    """One memo's counters by its registered name."""
    return next(s for s in memo.stats() if s.name == name)


def fresh(data: bytes) -> bytes:
    """The answer to ``data`` with every memo of the process cleared first."""
    memo.clear_all()
    return run_bytes(data)


def placed_request(xr: dict[str, Any] | None = None) -> fnv1.RunFunctionRequest:
    """A deployment's second call: the fleet fetched, replicas observed and Ready."""
    xr = xr or deployment(replicas=2)
    first = fnv1.RunFunctionResponse.FromString(run_bytes(request(xr).SerializeToString()))
    fetched = satisfy(first, WORLD)
    second = fnv1.RunFunctionResponse.FromString(
        run_bytes(request(xr, required=fetched).SerializeToString())
    )
    observed = {}
    for key, resource in second.desired.resources.items():
        obj = _json(resource.resource)
        obj["metadata"]["uid"] = f"uid-{key}"
        obj["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "Ok"}]}
        observed[key] = obj
    return request(xr, observed=observed, required=fetched)


def _json(struct: Any) -> dict[str, Any]:
    from google.protobuf import json_format

    return json_format.MessageToDict(struct)  # type: ignore[no-any-return]


@pytest.fixture
def cleared() -> Iterator[None]:
    memo.clear_all()
    yield
    memo.clear_all()


def test_a_repeated_request_is_answered_from_memory_with_the_same_bytes(cleared: None) -> None:
    data = placed_request().SerializeToString()
    computed = run_bytes(data)
    before = stats("runtime.answers")
    remembered = run_bytes(data)
    after = stats("runtime.answers")
    assert remembered == computed
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)
    assert fresh(data) == computed
    rsp = fnv1.RunFunctionResponse.FromString(remembered)
    assert {k for k in rsp.desired.resources if k.startswith("replica-")}  # something was placed


def test_equal_content_sent_in_another_map_order_is_the_same_request(cleared: None) -> None:
    # Go's encoder writes a Struct's map in any order, so Crossplane's bytes differ from
    # call to call for the same objects; the key reads content, not bytes.
    req = placed_request()
    xr = _json(req.observed.composite.resource)
    reordered = {key: xr[key] for key in reversed(list(xr))}
    reordered["metadata"] = {k: xr["metadata"][k] for k in reversed(list(xr["metadata"]))}
    other = copy.deepcopy(req)
    other.observed.composite.resource.CopyFrom(as_struct(reordered))
    assert other.SerializeToString() != req.SerializeToString()
    assert request_key(other)[0] == request_key(req)[0]
    computed = run_bytes(req.SerializeToString())
    hits = stats("runtime.answers").hits
    assert run_bytes(other.SerializeToString()) == computed
    assert stats("runtime.answers").hits == hits + 1


def _keys(view: Any) -> tuple[Any, ...]:
    """Every object's ``cache_key`` in a view, by place (composite, observed, required)."""
    return (
        view.composite.cache_key if view.composite is not None else None,
        {key: doc.cache_key for key, doc in view.observed.items()},
        {key: [doc.cache_key for doc in items] for key, items in view.required.items()},
    )


def _with_bookkeeping(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionRequest:
    """``req`` with ``managedFields`` on every object, maps written in reverse order."""

    def sent(struct: Any) -> None:
        data = _json(struct)
        if not data:
            return  # no object: nothing the API server wrote
        data.setdefault("metadata", {})["managedFields"] = [
            {"manager": "crossplane", "fieldsV1": {"f:spec": {".": {}}}}
        ]
        struct.CopyFrom(as_struct({key: data[key] for key in reversed(list(data))}))

    out = copy.deepcopy(req)
    sent(out.observed.composite.resource)
    for resource in out.observed.resources.values():
        sent(resource.resource)
    for resources in out.required_resources.values():
        for item in resources.items:
            sent(item.resource)
    return out


def test_each_objects_digest_from_the_key_is_the_one_its_document_computes() -> None:
    # The answers' key digests each object; a request not remembered hands those digests
    # to its documents (the validated documents' key): they must be the digests each
    # document computes alone, or a miss would validate every object again.
    base = placed_request()
    base.required_resources["classes"].items.add()  # an item without an object
    base.required_resources["caches"].SetInParent()  # fetched, none
    for req in (base, _with_bookkeeping(base)):
        keyed = copy.deepcopy(req)
        _, digests = request_key(keyed)
        assert _keys(request_from_proto(keyed, digests)) == _keys(
            request_from_proto(copy.deepcopy(req))
        )
    # managedFields are dropped before either digest: the same keys with them or without.
    assert _keys(request_from_proto(_with_bookkeeping(base))) == _keys(request_from_proto(base))


def test_a_change_between_remembered_calls_is_answered_as_afresh(cleared: None) -> None:
    # Crossplane's steady loop: the same request again, then one cluster's status and one
    # observed replica changed, then that request again; each answer from memory or from
    # remembered documents is the answer computed with every memo empty.
    steady = _with_bookkeeping(placed_request())
    changed = copy.deepcopy(steady)
    _edit_struct(
        lambda r: r.required_resources["clusters"].items[1].resource,
        _set(("status", "conditions"), [{"type": "Ready", "status": "False", "reason": "Down"}]),
    )(changed)
    _edit_struct(_first_replica, _set(("metadata", "resourceVersion"), "2"))(changed)
    sequence = [steady, steady, changed, changed, steady]
    answers, misses = [], []
    for req in sequence:
        answers.append(run_bytes(req.SerializeToString()))
        misses.append((stats("runtime.answers").misses, stats("runtime.documents").misses))
    # Computed twice (the first call of each request); the changed request validated
    # only the two objects that changed.
    assert [b[0] - a[0] for a, b in itertools.pairwise(misses)] == [0, 1, 0, 0]
    assert misses[2][1] - misses[1][1] == 2
    for req, answered in zip(sequence, answers, strict=True):
        assert answered == fresh(req.SerializeToString())
    assert answers[2] != answers[0]


def _edit_struct(
    path: Callable[[fnv1.RunFunctionRequest], Any], change: Callable[[Any], None]
) -> Callable[[fnv1.RunFunctionRequest], None]:
    def edit(req: fnv1.RunFunctionRequest) -> None:
        target = path(req)
        data = _json(target)
        change(data)
        target.CopyFrom(as_struct(data))

    return edit


def _set(keys: tuple[str, ...], value: Any) -> Callable[[Any], None]:
    def change(data: Any) -> None:
        for key in keys[:-1]:
            data = data.setdefault(key, {})
        data[keys[-1]] = value

    return change


def _first_replica(req: fnv1.RunFunctionRequest) -> Any:
    key = min(k for k in req.observed.resources if k.startswith("replica-"))
    return req.observed.resources[key].resource


def _drop_cluster(req: fnv1.RunFunctionRequest) -> None:
    del req.required_resources["clusters"].items[0]


def _unfetch_classes(req: fnv1.RunFunctionRequest) -> None:
    del req.required_resources["classes"]


def _tag(req: fnv1.RunFunctionRequest) -> None:
    req.meta.tag = "tag-2"


def _desired(req: fnv1.RunFunctionRequest) -> None:
    req.desired.resources["earlier-step"].resource.CopyFrom(
        as_struct({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    )


def _input(req: fnv1.RunFunctionRequest) -> None:
    req.input.CopyFrom(as_struct({"apiVersion": "x.io/v1", "kind": "Input"}))


def _credentials(req: fnv1.RunFunctionRequest) -> None:
    req.credentials["c"].credential_data.data["k"] = b"v"


# Every part of a request the answer can depend on; a change to any of them is a new request.
CHANGES: dict[str, Callable[[fnv1.RunFunctionRequest], None]] = {
    "composite spec": _edit_struct(
        lambda r: r.observed.composite.resource, _set(("spec", "replicas"), 1)
    ),
    "composite resourceVersion only": _edit_struct(
        lambda r: r.observed.composite.resource, _set(("metadata", "resourceVersion"), "9")
    ),
    "observed replica turned not Ready": _edit_struct(
        _first_replica, _set(("status", "conditions"), [{"type": "Ready", "status": "False"}])
    ),
    "observed replica, same resourceVersion, other content": _edit_struct(
        _first_replica, _set(("metadata", "labels", "extra"), "x")
    ),
    "required cluster drained": _edit_struct(
        lambda r: r.required_resources["clusters"].items[0].resource,
        _set(("metadata", "annotations"), {"modelplane.ai/drain": "true"}),
    ),
    "required cluster gone": _drop_cluster,
    "classes not fetched yet": _unfetch_classes,
    "tag": _tag,
    "desired state of an earlier step": _desired,
    "context": _edit_struct(lambda r: r.context, _set(("region",), "eu")),
    "function input": _input,
    "credentials": _credentials,
}


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_a_request_changed_anywhere_is_answered_afresh(change: str, cleared: None) -> None:
    base = placed_request()
    changed = copy.deepcopy(base)
    CHANGES[change](changed)
    assert request_key(changed)[0] != request_key(base)[0]
    run_bytes(base.SerializeToString())  # remembered
    answered = run_bytes(changed.SerializeToString())
    assert answered == fresh(changed.SerializeToString())


def test_an_unfetched_key_and_a_key_fetched_with_none_are_different_requests() -> None:
    xr = deployment(replicas=1)
    absent = request(xr, required={"clusters": [ready_cluster()]})
    empty = request(xr, required={"clusters": [ready_cluster()], "classes": []})
    assert request_key(absent)[0] != request_key(empty)[0]


def test_only_answers_that_grow_with_the_fleet_are_remembered(cleared: None) -> None:
    # A ModelReplica is called once per replica of the fleet: remembering its answers would
    # only push the deployments' answers out.
    replica_call = request(
        replica(ready=True), required={"cluster": [ready_cluster("us-east-1")]}
    ).SerializeToString()
    run_bytes(replica_call)
    run_bytes(replica_call)
    assert stats("runtime.answers").size == 0
    cache_call = request(model_cache(), required={"clusters": WORLD[:2]}).SerializeToString()
    assert run_bytes(cache_call) == run_bytes(cache_call)
    assert stats("runtime.answers").size == 1


def test_a_remembered_answer_is_still_counted_and_logged(
    cleared: None, caplog: pytest.LogCaptureFixture
) -> None:
    bad = deployment()
    bad["spec"]["replicas"] = -1  # out of bounds: a Fatal result
    data = request(bad).SerializeToString()
    before = _fatal_count()
    with caplog.at_level("WARNING", logger="modelplane.function"):
        first, second = run_bytes(data), run_bytes(data)
    assert first == second
    assert stats("runtime.answers").hits >= 1
    assert _fatal_count() == before + 2
    fatal_lines = [
        r for r in caplog.records if r.getMessage() == "function returned a fatal result"
    ]
    assert len(fatal_lines) == 2


def _fatal_count() -> int:
    found = re.search(
        r'^modelplane_function_requests_total\{kind="ModelDeployment",result="fatal"\} (\d+)$',
        METRICS.render(),
        re.M,
    )
    return int(found.group(1)) if found else 0


def test_an_answer_over_the_size_bound_is_not_remembered(
    cleared: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "ANSWER_BYTES", 16)
    data = placed_request().SerializeToString()
    assert run_bytes(data) == run_bytes(data)
    assert stats("runtime.answers").size == 0


def test_memos_stay_within_their_bounds_under_a_long_run(
    cleared: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small bounds so a short run overflows every runtime memo many times over.
    monkeypatch.setattr(server._ANSWERS, "bound", 3)
    monkeypatch.setattr(documents._MEMO, "bound", 10)
    monkeypatch.setattr(structs._ENCODED, "bound", 5)
    first: tuple[bytes, bytes] | None = None
    for n in range(24):
        xr = deployment(name=f"model-{n}", namespace=f"team-{n % 3}", replicas=1 + n % 3)
        data = placed_request(xr).SerializeToString()
        answered = run_bytes(data)
        first = first or (data, answered)
        for s in memo.stats():
            assert s.size <= s.bound, s
    assert stats("runtime.answers").size == 3
    assert stats("runtime.documents").size == 10
    # What was dropped is computed again, to the same answer.
    assert first is not None
    assert run_bytes(first[0]) == first[1]


def _conditions(data: bytes) -> dict[str, str]:
    rsp = fnv1.RunFunctionResponse.FromString(data)
    return {c.type: c.reason for c in rsp.conditions}


def test_an_answer_that_reads_the_clock_is_not_remembered(
    cleared: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The rollout progress deadline makes a deployment's answer a function of the time while
    # a replica waits for Ready: the same request must turn to RolloutStuck once the
    # deadline passes, so such an answer is never served from memory.
    from datetime import UTC, datetime, timedelta

    from modelplane.runtime.crossplane import deployment_fn

    start = datetime(2026, 1, 15, 9, 0, 0, tzinfo=UTC)
    monkeypatch.setattr(deployment_fn, "clock", lambda: start)
    xr = deployment(replicas=2)
    first = fnv1.RunFunctionResponse.FromString(run_bytes(request(xr).SerializeToString()))
    fetched = satisfy(first, WORLD)
    second = fnv1.RunFunctionResponse.FromString(
        run_bytes(request(xr, required=fetched).SerializeToString())
    )
    # Created and still loading: stamped with the time they were asked for, not Ready.
    observed = {key: _json(r.resource) for key, r in second.desired.resources.items()}
    waiting = request(xr, observed=observed, required=fetched).SerializeToString()
    monkeypatch.setattr(deployment_fn, "clock", lambda: start + timedelta(minutes=5))
    assert _conditions(run_bytes(waiting))["Progressing"] != "RolloutStuck"
    monkeypatch.setattr(deployment_fn, "clock", lambda: start + timedelta(minutes=31))
    assert _conditions(run_bytes(waiting))["Progressing"] == "RolloutStuck"
