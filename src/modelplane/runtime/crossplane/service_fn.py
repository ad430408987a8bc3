"""The ModelService and InferenceGateway functions.

The reconciles are ``modelplane.reconcile.service`` and ``modelplane.reconcile.gateway``,
the same code ``render`` runs; this module reads the request (the InferenceGateway, the
namespace's ModelEndpoints, the observed route or Gateway) and writes the response.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.api import InferenceCluster, InferenceGateway, ModelEndpoint, ModelService
from modelplane.composition.frontdoor import sanitize_problem
from modelplane.reconcile.gateway import reconcile_gateway
from modelplane.reconcile.service import reconcile_service
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.messages import (
    FunctionRequest,
    FunctionResponse,
    fatal,
    response_of,
)
from modelplane.runtime.crossplane.requirements import (
    CALLER_KEYS,
    CLUSTERS,
    GATEWAY_CLUSTER,
    INFERENCE_GATEWAYS,
    PROVIDER,
    RUNTIME_CONFIG,
    SERVICE_ENDPOINTS,
    gateway_requirements,
    service_requirements,
)
from modelplane.runtime.crossplane.structs import integral_floats_to_int
from modelplane.runtime.wire import observed_objects


def _first(required: Mapping[str, Sequence[Any]], key: str) -> Mapping[str, Any] | None:
    items = required.get(key) or ()
    return items[0] if items and isinstance(items[0], Mapping) else None


def _sanitize(required: Mapping[str, Sequence[Any]]) -> str | None:
    return sanitize_problem(_first(required, PROVIDER), _first(required, RUNTIME_CONFIG))


def run_service(request: FunctionRequest) -> FunctionResponse:
    """The service function: requirements, the route on every gateway serving it, the status."""
    service = documents.composite(request.composite, ModelService)
    requirements = service_requirements(service.metadata.namespace or "default")
    if any(r.key not in request.required for r in requirements):
        # Not fetched yet: nothing is decided on a partial view.
        return FunctionResponse(composite_ready=False, requirements=requirements)
    try:
        gateways = documents.required(request.required, INFERENCE_GATEWAYS, InferenceGateway)
        clusters = documents.required(request.required, CLUSTERS, InferenceCluster)
        endpoints = documents.required(request.required, SERVICE_ENDPOINTS, ModelEndpoint)
    except documents.Refused as refused:
        return fatal(str(refused), requirements)
    assert gateways is not None and clusters is not None and endpoints is not None
    observed = observed_objects(
        {k: integral_floats_to_int(dict(v)) for k, v in request.observed.items()}
    )
    result = reconcile_service(
        service,
        endpoints,
        gateways,
        {c.metadata.name or "": c for c in clusters},
        _sanitize(request.required),
        observed,
    )
    return response_of(result, requirements)


def run_gateway(request: FunctionRequest) -> FunctionResponse:
    """The gateway function: its cluster, the Gateway there, its address and Ready."""
    gateway = documents.composite(request.composite, InferenceGateway)
    requirements = gateway_requirements(gateway)
    if any(r.key not in request.required for r in requirements):
        # Not fetched yet: nothing is decided on a partial view.
        return FunctionResponse(composite_ready=False, requirements=requirements)
    try:
        clusters = documents.required(request.required, GATEWAY_CLUSTER, InferenceCluster)
        gateways = documents.required(request.required, INFERENCE_GATEWAYS, InferenceGateway)
    except documents.Refused as refused:
        return fatal(str(refused), requirements)
    assert clusters is not None and gateways is not None
    # Only the names of the caller-key Secrets are read, never their data.
    keys = [
        str((item.get("metadata") or {}).get("name") or "")
        for item in request.required.get(CALLER_KEYS, ())
        if isinstance(item, Mapping)
    ]
    observed = observed_objects(
        {k: integral_floats_to_int(dict(v)) for k, v in request.observed.items()}
    )
    result = reconcile_gateway(
        gateway,
        clusters[0] if clusters else None,
        gateways,
        [k for k in keys if k],
        _sanitize(request.required),
        observed,
    )
    return response_of(result, requirements)
