"""The ModelService and InferenceGateway functions.

The reconciles are ``modelplane.reconcile.service`` and ``modelplane.reconcile.gateway``,
the same code ``render`` runs; this module reads the request (the InferenceGateway, the
namespace's ModelEndpoints, the observed route or Gateway) and writes the response.
"""

from __future__ import annotations

from collections.abc import Mapping

from modelplane.api import InferenceGateway, ModelEndpoint, ModelService
from modelplane.naming import FRONT_GATEWAY_KEY, SERVICE_ROUTE_KEY
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
    GATEWAY_CLASS,
    INFERENCE_GATEWAY,
    SERVICE_ENDPOINTS,
    gateway_requirements,
    service_requirements,
)
from modelplane.runtime.crossplane.structs import integral_floats_to_int
from modelplane.runtime.wire import observed_object


def run_service(request: FunctionRequest) -> FunctionResponse:
    """The service function: requirements, the HTTPRoute, the address and conditions."""
    service = documents.composite(request.composite, ModelService)
    requirements = service_requirements(service.metadata.namespace or "default")
    try:
        gateways = documents.required(request.required, INFERENCE_GATEWAY, InferenceGateway)
        endpoints = documents.required(request.required, SERVICE_ENDPOINTS, ModelEndpoint)
    except documents.Refused as refused:
        return fatal(str(refused), requirements)
    if gateways is None or endpoints is None:
        # Not fetched yet: nothing is decided on a partial view.
        return FunctionResponse(composite_ready=False, requirements=requirements)
    raw_route = request.observed.get(SERVICE_ROUTE_KEY)
    route = observed_object(dict(raw_route)) if raw_route is not None else None
    result = reconcile_service(service, endpoints, gateways[0] if gateways else None, route)
    return response_of(result, requirements)


def run_gateway(request: FunctionRequest) -> FunctionResponse:
    """The gateway function: its GatewayClass's controller, the Gateway, its address and Ready."""
    gateway = documents.composite(request.composite, InferenceGateway)
    requirements = gateway_requirements(gateway)
    if GATEWAY_CLASS not in request.required:
        # Not fetched yet: nothing is decided on a partial view.
        return FunctionResponse(composite_ready=False, requirements=requirements)
    classes = request.required[GATEWAY_CLASS]
    spec = classes[0].get("spec", {}) if classes and isinstance(classes[0], Mapping) else {}
    controller = spec.get("controllerName") if isinstance(spec, Mapping) else None
    raw = request.observed.get(FRONT_GATEWAY_KEY)
    observed = observed_object(integral_floats_to_int(dict(raw))) if raw is not None else None
    result = reconcile_gateway(
        gateway, observed, controller if isinstance(controller, str) else None
    )
    return response_of(result, requirements)
