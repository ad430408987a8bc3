"""The ModelCache function: stage the weights on every cluster of the footprint.

The reconcile itself is ``modelplane.reconcile.cache.reconcile_cache``, the same code
``render`` runs; this module reads the request (the fleet, the observed Objects) and
writes the response. It asks for no Secret: the token lives only on each cluster
(docs/composition.md, "What a ModelCache composes").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.api import InferenceCluster, ModelCache
from modelplane.composition.cache import LEGACY_TOKEN_PREFIX
from modelplane.composition.types import ComposedObject
from modelplane.reconcile.cache import reconcile_cache
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.held import held_response
from modelplane.runtime.crossplane.messages import (
    FunctionRequest,
    FunctionResponse,
    response_of,
)
from modelplane.runtime.crossplane.replica_fn import observed_objects
from modelplane.runtime.crossplane.requirements import CLUSTERS, cache_requirements
from modelplane.runtime.wire import kept_object


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
    """The cache function: requirements, composed Objects and Usages, status, conditions,
    events."""
    cache = cache_of(request.composite)
    requirements = cache_requirements(cache)
    try:
        clusters = documents.required(request.required, CLUSTERS, InferenceCluster)
    except documents.Refused as refused:
        return held_response(request, str(refused), requirements, kept_object)
    observed = {
        key: seen
        for key, seen in observed_objects(request.observed).items()
        # An earlier release's token Object carries the token in its spec: never keep it.
        if not key.startswith(LEGACY_TOKEN_PREFIX)
    }
    if clusters is None:
        # Not fetched yet: keep every observed Object (nothing staged is deleted).
        return FunctionResponse(
            resources=[ComposedObject(k, o.kept) for k, o in observed.items()],
            composite_ready=False,
            requirements=requirements,
        )
    result = reconcile_cache(cache, clusters, observed)
    response = response_of(result, requirements)
    response.resources.extend(result.usages)  # the staging Objects, then their Usages
    return response
