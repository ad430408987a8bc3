"""The ModelCache function: stage the weights on every cluster of the footprint.

The reconcile itself is ``modelplane.reconcile.cache.reconcile_cache``, the same code
``render`` runs; this module reads the request (the fleet, the auth Secret's presence,
the observed Objects) and writes the response. The Secret's value is never read here:
only whether it holds the key; the provider copies the value (docs/composition.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.api import InferenceCluster, ModelCache
from modelplane.composition.types import ComposedObject
from modelplane.reconcile.cache import SecretState, reconcile_cache
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.held import held_response
from modelplane.runtime.crossplane.messages import (
    FunctionRequest,
    FunctionResponse,
    response_of,
)
from modelplane.runtime.crossplane.replica_fn import observed_objects
from modelplane.runtime.crossplane.requirements import (
    AUTH_SECRET,
    CLUSTERS,
    cache_requirements,
    fetched,
)
from modelplane.runtime.wire import kept_object


def secret_state(
    cache: ModelCache, required: Mapping[str, Sequence[Mapping[str, Any]]]
) -> SecretState:
    """NONE without ``authSecret``; else whether the fetched Secret holds the key."""
    hf = cache.spec.hugging_face
    auth = hf.auth_secret if hf is not None else None
    if auth is None:
        return SecretState.NONE
    items = fetched(required, AUTH_SECRET)
    if items is None:
        return SecretState.UNRESOLVED
    for item in items:
        meta = item.get("metadata")
        data = item.get("data")
        if (
            item.get("kind") == "Secret"
            and isinstance(meta, Mapping)
            and meta.get("name") == auth.name
            and isinstance(data, Mapping)
            and auth.key in data
        ):
            return SecretState.PRESENT
    return SecretState.ABSENT


def cache_of(composite: Mapping[str, Any] | None) -> ModelCache:
    """The composite as a ModelCache; Refused when malformed."""
    cache = documents.composite(composite, ModelCache)
    if cache.spec.hugging_face is None:
        # MC-01, which the API server enforces; the runtime checks structure only.
        raise documents.Refused(
            f"invalid ModelCache {cache.metadata.namespace or 'default'}/{cache.metadata.name}: "
            "spec: spec.huggingFace is required when spec.source is HuggingFace."
        )
    return cache


def run_cache(request: FunctionRequest) -> FunctionResponse:
    """The cache function: requirements, composed Objects, status, conditions, events."""
    cache = cache_of(request.composite)
    requirements = cache_requirements(cache)
    try:
        clusters = documents.required(request.required, CLUSTERS, InferenceCluster)
    except documents.Refused as refused:
        return held_response(request, str(refused), requirements, kept_object)
    observed = observed_objects(request.observed)
    if clusters is None:
        # Not fetched yet: keep every observed Object (nothing staged is deleted).
        return FunctionResponse(
            resources=[ComposedObject(k, o.kept) for k, o in observed.items()],
            composite_ready=False,
            requirements=requirements,
        )
    result = reconcile_cache(
        cache, clusters, observed, secret=secret_state(cache, request.required)
    )
    return response_of(result, requirements)
