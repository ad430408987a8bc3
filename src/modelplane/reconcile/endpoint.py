"""The ModelEndpoint reconcile: compose its routable backend, report RoutingReady.

Pure: the endpoint and the keys of its observed composed resources in; the desired
Service and EndpointSlice (and, for https, the BackendTLSPolicy), the status and the
events out. ``modelplane render`` and the
Crossplane function run this same code (docs/composition.md, routable endpoints).
"""

from __future__ import annotations

from collections.abc import Collection

from modelplane.api import ModelEndpoint
from modelplane.api.meta import condition
from modelplane.api.modelendpoint import ModelEndpointStatus, Routing
from modelplane.composition.backend import (
    InvalidURL,
    backend_objects,
    backend_tls_policy,
    parse_target,
)
from modelplane.composition.types import ComposedObject
from modelplane.events import Event
from modelplane.naming import (
    BACKEND_SERVICE_KEY,
    BACKEND_SLICE_KEY,
    BACKEND_TLS_POLICY_KEY,
    backend_service_name,
)
from modelplane.reconcile.result import ReconcileResult

ROUTING_READY = "RoutingReady"


class EndpointResult(ReconcileResult[ModelEndpointStatus]):
    """What one ModelEndpoint reconcile returns; ready: routable, its backend exists."""

    __slots__ = ()


def reconcile_endpoint(endpoint: ModelEndpoint, observed: Collection[str]) -> EndpointResult:
    """Compose the backend of ``endpoint``; ``observed`` holds the resource keys that exist.

    The backend's name is published once the Service, the EndpointSlice and (https) the
    BackendTLSPolicy are observed: a ModelService routes only to endpoints whose backend exists.
    """
    namespace = endpoint.metadata.namespace or "default"
    name = endpoint.metadata.name or ""
    try:
        target = parse_target(endpoint.spec.url)
    except InvalidURL as invalid:
        message = f"spec.url: {invalid}"
        return EndpointResult(
            objects=[],
            status=ModelEndpointStatus(routing=Routing()),
            conditions=[condition(ROUTING_READY, False, "InvalidURL", message)],
            events=[Event("Warning", f"ModelEndpoint {namespace}/{name}: {message}")],
        )
    service, endpoint_slice = backend_objects(namespace, name, target)
    objects = [
        ComposedObject(BACKEND_SERVICE_KEY, service, ready=True),
        ComposedObject(BACKEND_SLICE_KEY, endpoint_slice, ready=True),
    ]
    policy = backend_tls_policy(namespace, name, target)
    if policy is not None:
        objects.append(ComposedObject(BACKEND_TLS_POLICY_KEY, policy, ready=True))
    backend = backend_service_name(name)
    # An https backend is routable only with its TLS policy: without it the gateway
    # would speak plain HTTP to port 443.
    if {o.key for o in objects} <= set(observed):
        ready = condition(
            ROUTING_READY,
            True,
            "BackendReady",
            f"Service {backend} routes to {target.host}:{target.port} ({target.address_type})",
        )
        return EndpointResult(
            objects, ModelEndpointStatus(routing=Routing(backend_name=backend)), [ready]
        )
    waiting = condition(
        ROUTING_READY, False, "Configuring", f"Waiting for Service {backend} and its EndpointSlice"
    )
    return EndpointResult(objects, ModelEndpointStatus(routing=Routing()), [waiting])


def converged(result: EndpointResult) -> list[str]:
    """The keys ``render`` treats as observed: everything it composes (it shows convergence)."""
    return [o.key for o in result.objects]
