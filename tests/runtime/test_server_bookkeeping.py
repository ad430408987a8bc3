"""Requests as Crossplane sends them: the API server's bookkeeping changes no answer.

Crossplane sends every required resource whole, with the ``managedFields`` the API server
keeps and the last-applied configuration kubectl writes. The function never reads
``managedFields``, so they are dropped before an object is digested or validated; the
answer must be the one for the same objects without them, byte for byte, and an object
whose content changed must be read again, whatever else stayed the same.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest
from google.protobuf import json_format

from modelplane import memo
from modelplane.runtime.crossplane.server import run_bytes

from .helpers import as_struct, deployment, inference_class, ready_cluster, request, satisfy

WORLD = [ready_cluster("us-east-1"), ready_cluster("eu-west-1"), inference_class()]
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@pytest.fixture(autouse=True)
def cleared() -> Iterator[None]:
    memo.clear_all()
    yield
    memo.clear_all()


def as_sent(obj: dict[str, Any], writer: str = "kubectl-client-side-apply") -> dict[str, Any]:
    """``obj`` with the last-applied configuration and ``managedFields`` of two writers."""
    doc = copy.deepcopy(obj)
    md = doc.setdefault("metadata", {})
    applied = {k: v for k, v in doc.items() if k != "status"}
    md.setdefault("annotations", {})[LAST_APPLIED] = json.dumps(applied, sort_keys=True)
    md["managedFields"] = [
        {
            "manager": writer,
            "operation": "Update",
            "apiVersion": "modelplane.ai/v1alpha1",
            "time": "2026-01-15T09:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {".": {}, "f:replicas": {}}},
        },
        {
            "manager": "crossplane",
            "operation": "Update",
            "subresource": "status",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:conditions": {}}},
        },
    ]
    return doc


def placed(world: list[dict[str, Any]], xr: dict[str, Any]) -> fnv1.RunFunctionRequest:
    """A deployment's call with the fleet fetched from ``world`` and its replicas observed."""
    first = fnv1.RunFunctionResponse.FromString(run_bytes(request(xr).SerializeToString()))
    fetched = satisfy(first, world)
    second = fnv1.RunFunctionResponse.FromString(
        run_bytes(request(xr, required=fetched).SerializeToString())
    )
    observed = {}
    for key, resource in second.desired.resources.items():
        obj = json_format.MessageToDict(resource.resource)
        obj["metadata"]["uid"] = f"uid-{key}"
        obj["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "Ok"}]}
        observed[key] = obj
    return request(xr, observed=observed, required=fetched)


def fresh(req: fnv1.RunFunctionRequest) -> bytes:
    """The answer to ``req`` with every memo of the process cleared first."""
    memo.clear_all()
    return run_bytes(req.SerializeToString())


def with_bookkeeping(req: fnv1.RunFunctionRequest, writer: str) -> fnv1.RunFunctionRequest:
    """``req`` with the composite and every required and observed object carrying what the
    server adds."""
    out = copy.deepcopy(req)
    for resources in out.required_resources.values():
        for item in resources.items:
            item.resource.CopyFrom(as_struct(as_sent(json_format.MessageToDict(item.resource))))
    composite = out.observed.composite.resource
    composite.CopyFrom(as_struct(as_sent(json_format.MessageToDict(composite))))
    for resource in out.observed.resources.values():
        resource.resource.CopyFrom(as_struct(as_sent(json_format.MessageToDict(resource.resource))))
    return out


def test_managed_fields_and_annotations_change_no_answer() -> None:
    plain = placed(WORLD, deployment(replicas=2))
    sent = with_bookkeeping(plain, "kubectl-client-side-apply")
    answer = fresh(plain)
    assert fnv1.RunFunctionResponse.FromString(answer).desired.resources  # something placed
    assert fresh(sent) == answer
    # From memory too, after the other writer's bookkeeping was seen first.
    memo.clear_all()
    run_bytes(with_bookkeeping(plain, "another-writer").SerializeToString())
    assert run_bytes(sent.SerializeToString()) == answer


def _edit_clusters(req: fnv1.RunFunctionRequest, edit: Any) -> fnv1.RunFunctionRequest:
    out = copy.deepcopy(req)
    for item in out.required_resources["clusters"].items:
        cluster = json_format.MessageToDict(item.resource)
        edit(cluster)
        item.resource.CopyFrom(as_struct(cluster))
    return out


def _drain(cluster: dict[str, Any]) -> None:
    cluster["metadata"].setdefault("annotations", {})["modelplane.ai/drain"] = "true"


def _break(cluster: dict[str, Any]) -> None:
    cluster["spec"]["nodePools"] = "many"


def test_a_changed_cluster_is_read_again_whatever_its_bookkeeping() -> None:
    sent = with_bookkeeping(placed(WORLD, deployment(replicas=2)), "kubectl-client-side-apply")
    run_bytes(sent.SerializeToString())
    # The same uid, resourceVersion and managedFields; only content the function reads.
    drained = _edit_clusters(sent, _drain)
    assert run_bytes(drained.SerializeToString()) == fresh(drained)
    run_bytes(sent.SerializeToString())
    broken = fnv1.RunFunctionResponse.FromString(
        run_bytes(_edit_clusters(sent, _break).SerializeToString())
    )
    said = [r.message for r in broken.results]
    assert said and said[0].startswith(
        "invalid required resource clusters: InferenceCluster us-east-1: spec.nodePools:"
    )
