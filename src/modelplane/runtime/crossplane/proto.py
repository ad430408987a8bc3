"""RunFunctionRequest -> FunctionRequest and FunctionResponse -> RunFunctionResponse (v1).

The v1beta1 service has the same wire format; ``server`` converts through bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from google.protobuf import duration_pb2

from modelplane.runtime.crossplane.freshness import ttl_for
from modelplane.runtime.crossplane.messages import FunctionRequest, FunctionResponse
from modelplane.runtime.crossplane.requirements import PREFETCHED_FIELD
from modelplane.runtime.crossplane.structs import (
    SERVER_BOOKKEEPING,
    StructDocument,
    encode_struct,
    struct_to_dict,
)

_SEVERITY = {
    "Fatal": fnv1.SEVERITY_FATAL,
    "Warning": fnv1.SEVERITY_WARNING,
    "Normal": fnv1.SEVERITY_NORMAL,
}
_STATUS = {
    "True": fnv1.STATUS_CONDITION_TRUE,
    "False": fnv1.STATUS_CONDITION_FALSE,
    "Unknown": fnv1.STATUS_CONDITION_UNKNOWN,
}


def _ready(flag: bool | None) -> int:
    if flag is None:
        return fnv1.READY_UNSPECIFIED
    return fnv1.READY_TRUE if flag else fnv1.READY_FALSE


def request_from_proto(request: fnv1.RunFunctionRequest) -> FunctionRequest:
    """The plain-data view of a request. Numbers are still floats here.

    Objects stay Structs until first read (``StructDocument``), so validated objects
    can be reused by the digest of their bytes. Nothing reads an object's
    ``managedFields`` (models and observed views read name, namespace, uid,
    resourceVersion, labels and annotations; re-emitted objects keep name, namespace,
    labels and annotations): they are dropped first, from this process's copy.
    """
    composite: Mapping[str, Any] | None = None
    if request.observed.HasField("composite") and request.observed.composite.resource.fields:
        composite = StructDocument(request.observed.composite.resource, unread=SERVER_BOOKKEEPING)
    observed = {
        key: StructDocument(resource.resource, unread=SERVER_BOOKKEEPING)
        for key, resource in request.observed.resources.items()
    }
    required = {
        key: [StructDocument(item.resource, unread=SERVER_BOOKKEEPING) for item in resources.items]
        for key, resources in request.required_resources.items()
    }
    return FunctionRequest(
        composite=composite, observed=observed, required=required, prefetched=_prefetched(request)
    )


def _prefetched(request: fnv1.RunFunctionRequest) -> frozenset[str]:
    """The requirement keys the step's input says the Composition fetches (none: no input)."""
    if not request.HasField("input") or PREFETCHED_FIELD not in request.input.fields:
        return frozenset()
    value = request.input.fields[PREFETCHED_FIELD]
    if value.WhichOneof("kind") != "list_value":
        return frozenset()
    return frozenset(v.string_value for v in value.list_value.values if v.HasField("string_value"))


def composite_kind(request: fnv1.RunFunctionRequest) -> str:
    """The kind of the request's observed composite ('' when there is none)."""
    fields = request.observed.composite.resource.fields
    return fields["kind"].string_value if "kind" in fields else ""


def _key_of(document: Mapping[str, Any]) -> str:
    key = getattr(document, "cache_key", None)
    assert isinstance(key, bytes), "request_from_proto builds StructDocuments"
    return key.hex()


def _copy_field(target: Any, field: Any, value: Any) -> None:
    # One set field of a message into an empty message of the same type, whatever its kind.
    if field.message_type is None and not field.is_repeated:
        setattr(target, field.name, value)
    else:
        getattr(target, field.name).MergeFrom(value)  # a message, a list or a map


def request_key(request: fnv1.RunFunctionRequest, view: FunctionRequest) -> str:
    """A digest of everything a response to ``request`` is computed from.

    The response is a pure function of the plain-data view (composite, observed and
    required objects) and of the request's other fields, which ``response_to_proto``
    passes through (tag, desired state, context). The observed and required objects
    enter the key by their ``cache_key`` (the digest ``documents.load`` reuses, computed
    once per object); every other field of the request, known or added later, by its
    deterministic encoding. Equal requests therefore have equal keys, however Crossplane
    ordered their maps (Go's encoder does not sort them, so the wire bytes differ).
    Encoding the whole request deterministically in one call measured slower (about
    40 ms at 1,000 clusters) than these per-object digests.
    """
    rest = fnv1.RunFunctionRequest()
    for field, value in request.ListFields():
        if field.name == "required_resources":
            continue  # by the objects' digests, below
        if field.name == "observed":
            for sub, part in value.ListFields():
                if sub.name != "resources":  # resources by their digests, below
                    _copy_field(rest.observed, sub, part)
        else:
            _copy_field(rest, field, value)
    digest = hashlib.blake2b(rest.SerializeToString(deterministic=True), digest_size=16)
    parts = [
        digest.hexdigest(),
        [[key, _key_of(view.observed[key])] for key in sorted(view.observed)],
        [[key, [_key_of(item) for item in view.required[key]]] for key in sorted(view.required)],
    ]
    encoded = json.dumps(parts, separators=(",", ":")).encode()
    return hashlib.blake2b(encoded, digest_size=16).hexdigest()


def response_to_proto(
    request: fnv1.RunFunctionRequest, response: FunctionResponse
) -> fnv1.RunFunctionResponse:
    """The wire response: the request's desired state and context passed through, plus ours.

    The TTL is the composite kind's in the answer's state (``freshness``).

    On a Fatal result the desired state is passed through unchanged: Crossplane applies
    nothing from a failed pipeline, and nothing composed earlier is dropped from it.
    """
    ttl = duration_pb2.Duration()
    ttl.FromTimedelta(ttl_for(composite_kind(request), response.state))
    out = fnv1.RunFunctionResponse(meta=fnv1.ResponseMeta(tag=request.meta.tag, ttl=ttl))
    out.desired.CopyFrom(request.desired)
    if request.HasField("context"):
        out.context.CopyFrom(request.context)
    for result in response.results:
        out.results.append(fnv1.Result(severity=_SEVERITY[result.severity], message=result.message))
    for requirement in response.requirements:
        selector = out.requirements.resources[requirement.key]
        selector.api_version = requirement.api_version
        selector.kind = requirement.kind
        if requirement.match_name is not None:
            selector.match_name = requirement.match_name
        else:
            # An empty label set selects every object of the kind.
            selector.match_labels.SetInParent()
            for label, value in requirement.match_labels:
                selector.match_labels.labels[label] = value
        if requirement.namespace is not None:
            selector.namespace = requirement.namespace
    if response.fatal:
        return out
    for resource in response.resources:
        desired = out.desired.resources[resource.key]
        desired.resource.ParseFromString(encode_struct(resource.object))
        desired.ready = _ready(resource.ready)
    if response.composite_status is not None:
        # Earlier pipeline steps may have set other status fields: ours are merged over them.
        earlier = struct_to_dict(out.desired.composite.resource).get("status")
        status = dict(earlier) if isinstance(earlier, dict) else {}
        status.update(response.composite_status)
        out.desired.composite.resource.update({"status": status})
    if response.composite_ready is not None:
        out.desired.composite.ready = _ready(response.composite_ready)  # type: ignore[assignment]
    for condition in response.conditions:
        wire = fnv1.Condition(
            type=condition.type, status=_STATUS[condition.status], reason=condition.reason or ""
        )
        if condition.message:
            wire.message = condition.message
        out.conditions.append(wire)
    return out
