"""A ModelService reconciled on one gateway, and what it delivers there: the shared steps of the
route tests (test_model_service.py, test_service_front_door.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.api import InferenceCluster, InferenceGateway, ModelEndpoint, ModelService
from modelplane.composition.observed import ObservedObject
from modelplane.naming import SERVICE_RETRY_KEY, SERVICE_ROUTE_KEY
from modelplane.reconcile.service import ServiceResult, gateway_key
from modelplane.reconcile.service import reconcile_service as reconcile_on_gateways
from modelplane.runtime.wire import observed_object
from tests.builders import front_door_cluster

from .schemas import validate_delivered, validate_manifest

CLUSTERS = {"frontdoor": InferenceCluster.model_validate(front_door_cluster())}
# Envoy AI Gateway's controller writes Accepted on the AIGatewayRoute's own conditions
# (envoyproxy/ai-gateway api/v1beta1/status.go @ v1.1.0).
ACCEPTED = observed_object({"status": {"conditions": [{"type": "Accepted", "status": "True"}]}})


def reconcile_service(
    service: ModelService,
    endpoints: list[ModelEndpoint],
    gateway: InferenceGateway | None,
    route: ObservedObject | None,
    more: Mapping[str, ObservedObject] | None = None,
) -> ServiceResult:
    """The reconcile with one gateway (on its front door cluster) or none, and the route as
    its Object reports it observed (None: not yet); ``more``: other observed Objects by key."""
    observed = dict(more or {})
    if gateway is not None and route is not None:
        observed[gateway_key(gateway, SERVICE_ROUTE_KEY)] = ObservedObject(remote=route)
    gateways = [gateway] if gateway is not None else []
    return reconcile_on_gateways(service, endpoints, gateways, CLUSTERS, None, observed)


def delivered(result: ServiceResult) -> dict[str, dict[str, Any]]:
    """What the service's Objects deliver to the gateway's cluster, by resource key; each
    Object valid against its released schema."""
    out = {}
    for o in result.objects:
        validate_delivered(o.object)
        out[o.key] = o.object["spec"]["forProvider"]["manifest"]
    return out


def route_and_policy(
    result: ServiceResult, gateway: InferenceGateway
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The AIGatewayRoute and the BackendTrafficPolicy delivered for ``gateway``, each valid
    against its released CRD."""
    manifests = delivered(result)
    route = manifests[gateway_key(gateway, SERVICE_ROUTE_KEY)]
    policy = manifests[gateway_key(gateway, SERVICE_RETRY_KEY)]
    assert (route["kind"], policy["kind"]) == ("AIGatewayRoute", "BackendTrafficPolicy")
    validate_manifest(route)
    validate_manifest(policy)
    return route, policy
