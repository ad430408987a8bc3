"""The ModelEndpoint reconcile: check its origin, publish its backend's name, report RoutingReady.

Pure: the endpoint in; the status and the events out, nothing composed. Its Backend,
AIServiceBackend and (with a credential) BackendSecurityPolicy are composed by each ModelService
selecting it, on the cluster of every gateway serving that service (reconcile/service.py).
``modelplane render`` and the Crossplane function run this same code (docs/composition.md,
"Routable endpoints").
"""

from __future__ import annotations

from modelplane.api import ModelEndpoint
from modelplane.api.meta import condition
from modelplane.api.modelendpoint import ModelEndpointStatus, Routing
from modelplane.composition.backend import InvalidURL, parse_origin
from modelplane.events import Event
from modelplane.naming import backend_service_name
from modelplane.reconcile.result import ReconcileResult

ROUTING_READY = "RoutingReady"


class EndpointResult(ReconcileResult[ModelEndpointStatus]):
    """What one ModelEndpoint reconcile returns; ready: its origin is routable."""

    __slots__ = ()


def reconcile_endpoint(endpoint: ModelEndpoint) -> EndpointResult:
    """Check the origin of ``endpoint`` and publish the name its backend is composed under."""
    namespace = endpoint.metadata.namespace or "default"
    name = endpoint.metadata.name or ""
    spec = endpoint.spec
    try:
        target = parse_origin(spec.origin)
    except InvalidURL as invalid:
        message = f"spec.origin: {invalid}"
        return EndpointResult(
            objects=[],
            status=ModelEndpointStatus(routing=Routing()),
            conditions=[condition(ROUTING_READY, False, "InvalidOrigin", message)],
            events=[Event("Warning", f"ModelEndpoint {namespace}/{name}: {message}")],
        )
    # Nothing is composed here: each ModelService selecting the endpoint composes its
    # Backend, AIServiceBackend and (keyed) BackendSecurityPolicy on the cluster of every
    # gateway serving it (reconcile/service.py ``deliver_route``), where the route needs them.
    backend = backend_service_name(name)
    ready = condition(
        ROUTING_READY,
        True,
        "BackendReady",
        f"Routable as {backend} ({spec.api.schema_}) to "
        f"{target.scheme}://{target.host}:{target.port}{spec.api.prefix}",
    )
    return EndpointResult([], ModelEndpointStatus(routing=Routing(backend_name=backend)), [ready])
