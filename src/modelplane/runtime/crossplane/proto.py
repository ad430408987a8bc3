"""RunFunctionRequest -> FunctionRequest and FunctionResponse -> RunFunctionResponse (v1).

The v1beta1 service has the same wire format; ``server`` converts through bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from google.protobuf import duration_pb2, struct_pb2

from modelplane.runtime.crossplane.freshness import ttl_for
from modelplane.runtime.crossplane.messages import FunctionRequest, FunctionResponse
from modelplane.runtime.crossplane.requirements import PREFETCHED_FIELD
from modelplane.runtime.crossplane.structs import (
    SERVER_BOOKKEEPING,
    StructDocument,
    drop_metadata,
    encode_struct,
    struct_digest,
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


def drop_bookkeeping(request: fnv1.RunFunctionRequest) -> None:
    """Every object's ``SERVER_BOOKKEEPING`` removed from ``request`` itself (the
    composite, the observed and the required objects): this process's own copy."""
    observed = request.observed
    if observed.HasField("composite"):
        drop_metadata(observed.composite.resource, SERVER_BOOKKEEPING)
    for resource in observed.resources.values():
        drop_metadata(resource.resource, SERVER_BOOKKEEPING)
    for resources in request.required_resources.values():
        for item in resources.items:
            drop_metadata(item.resource, SERVER_BOOKKEEPING)


@dataclass(frozen=True, slots=True)
class Digests:
    """Each object's ``cache_key`` (``struct_digest``), computed by ``request_key``."""

    composite: bytes
    observed: Mapping[str, bytes]
    required: Mapping[str, Sequence[bytes]]


def _digest(struct: struct_pb2.Struct) -> bytes:
    return struct_digest(struct.SerializeToString(deterministic=True))


def request_from_proto(
    request: fnv1.RunFunctionRequest, digests: Digests | None = None
) -> FunctionRequest:
    """The plain-data view of a request. Numbers are still floats here.

    Objects stay Structs until first read (``StructDocument``), so validated objects
    can be reused by the digest of their bytes. Nothing reads an object's
    ``managedFields`` (models and observed views read name, namespace, uid,
    resourceVersion, labels and annotations; re-emitted objects keep name, namespace,
    labels and annotations): they are dropped first, from this process's copy.

    ``digests``: each object's digest as ``request_key`` computed it (after the drop),
    given to its document instead of being computed again.
    """
    if digests is None:
        drop_bookkeeping(request)
    composite: Mapping[str, Any] | None = None
    if request.observed.HasField("composite") and request.observed.composite.resource.fields:
        composite = StructDocument(
            request.observed.composite.resource,
            key=None if digests is None else digests.composite,
        )
    observed = {
        key: StructDocument(
            resource.resource, key=None if digests is None else digests.observed[key]
        )
        for key, resource in request.observed.resources.items()
    }
    required = {
        key: _items(resources, None if digests is None else digests.required[key])
        for key, resources in request.required_resources.items()
    }
    return FunctionRequest(
        composite=composite, observed=observed, required=required, prefetched=_prefetched(request)
    )


def _items(resources: fnv1.Resources, digests: Sequence[bytes] | None) -> list[StructDocument]:
    if digests is None:
        return [StructDocument(item.resource) for item in resources.items]
    return [
        StructDocument(item.resource, key=digest)
        for item, digest in zip(resources.items, digests, strict=True)
    ]


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


def _copy_field(target: Any, field: Any, value: Any) -> None:
    # One set field of a message into an empty message of the same type, whatever its kind.
    if field.message_type is None and not field.is_repeated:
        setattr(target, field.name, value)
    else:
        getattr(target, field.name).MergeFrom(value)  # a message, a list or a map


def _framed(text: str) -> bytes:
    data = text.encode()
    return len(data).to_bytes(8, "little") + data


def request_key(request: fnv1.RunFunctionRequest) -> tuple[str, Digests]:
    """A digest of everything a response to ``request`` is computed from, and each
    object's digest (``request_from_proto`` gives them to its documents).

    The response is a pure function of the plain-data view (composite, observed and
    required objects) and of the request's other fields, which ``response_to_proto``
    passes through (tag, desired state, context). The bookkeeping the function never
    reads is dropped first (``drop_bookkeeping``). The observed and required objects
    enter the key by their digests (each object's deterministic encoding, the digest
    ``documents.load`` reuses), every other field of the request, known or added later,
    by its deterministic encoding: map entries sorted by key at every level. Equal
    requests therefore have equal keys, however Crossplane ordered their maps (Go's
    encoder does not sort them, so the wire bytes differ). Every part is framed by its
    length or count, so no two different requests read as the same sequence.
    Encoding the whole request deterministically in one call measured no cheaper: the
    encoding is the same work, and a changed request then needs each object's digest.
    """
    drop_bookkeeping(request)
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
    digests = Digests(
        _digest(request.observed.composite.resource),
        {key: _digest(r.resource) for key, r in request.observed.resources.items()},
        {
            key: [_digest(item.resource) for item in resources.items]
            for key, resources in request.required_resources.items()
        },
    )
    key = hashlib.sha256(rest.SerializeToString(deterministic=True))
    key.update(len(digests.observed).to_bytes(8, "little"))
    for name in sorted(digests.observed):
        key.update(_framed(name))
        key.update(digests.observed[name])
    key.update(len(digests.required).to_bytes(8, "little"))
    for name in sorted(digests.required):
        items = digests.required[name]
        key.update(_framed(name))
        key.update(len(items).to_bytes(8, "little"))
        key.update(b"".join(items))
    return key.hexdigest(), digests


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
