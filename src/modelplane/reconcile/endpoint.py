"""The ModelEndpoint reconcile: compose its routable backend, report RoutingReady.

Pure: the endpoint and the keys of its observed composed resources in; the desired
Backend, AIServiceBackend and (with a credential) BackendSecurityPolicy, the status and
the events out. ``modelplane render`` and the Crossplane function run this same code
(docs/composition.md, "Routable endpoints").
"""

from __future__ import annotations

from collections.abc import Collection

from modelplane.api import ModelEndpoint
from modelplane.api.meta import condition
from modelplane.api.modelendpoint import ModelEndpointStatus, Routing
from modelplane.composition.backend import (
    InvalidURL,
    ai_service_backend,
    backend_security_policy,
    eg_backend,
    parse_origin,
)
from modelplane.composition.types import ComposedObject
from modelplane.events import Event
from modelplane.naming import (
    AI_SERVICE_BACKEND_KEY,
    BACKEND_KEY,
    BACKEND_SECURITY_POLICY_KEY,
    backend_service_name,
)
from modelplane.reconcile.result import ReconcileResult

ROUTING_READY = "RoutingReady"


class EndpointResult(ReconcileResult[ModelEndpointStatus]):
    """What one ModelEndpoint reconcile returns; ready: routable, its backend exists."""

    __slots__ = ()


def reconcile_endpoint(endpoint: ModelEndpoint, observed: Collection[str]) -> EndpointResult:
    """Compose the backend of ``endpoint``; ``observed`` holds the resource keys that exist.

    The backend's name is published once the Backend, the AIServiceBackend and (with a
    credential) the BackendSecurityPolicy are observed: a ModelService routes only to
    endpoints whose backend exists, and a keyed provider only once its key is attached.
    """
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
    objects = [
        ComposedObject(BACKEND_KEY, eg_backend(namespace, name, target), ready=True),
        ComposedObject(
            AI_SERVICE_BACKEND_KEY,
            ai_service_backend(namespace, name, spec.api.schema_, spec.api.prefix),
            ready=True,
        ),
    ]
    if spec.credential is not None:
        secret = spec.credential.api_key.secret_ref.name
        policy = backend_security_policy(namespace, name, spec.api.schema_, secret)
        objects.append(ComposedObject(BACKEND_SECURITY_POLICY_KEY, policy, ready=True))
    backend = backend_service_name(name)
    if {o.key for o in objects} <= set(observed):
        ready = condition(
            ROUTING_READY,
            True,
            "BackendReady",
            f"AIServiceBackend {backend} ({spec.api.schema_}) routes to "
            f"{target.scheme}://{target.host}:{target.port}{spec.api.prefix}",
        )
        return EndpointResult(
            objects, ModelEndpointStatus(routing=Routing(backend_name=backend)), [ready]
        )
    waiting = condition(
        ROUTING_READY, False, "Configuring", f"Waiting for Backend and AIServiceBackend {backend}"
    )
    return EndpointResult(objects, ModelEndpointStatus(routing=Routing()), [waiting])


def converged(result: EndpointResult) -> list[str]:
    """The keys ``render`` treats as observed: everything it composes (it shows convergence)."""
    return [o.key for o in result.objects]
