"""The InferenceGateway reconcile: one Gateway of an installed implementation.

Pure: the InferenceGateway and its observed Gateway in; the desired Gateway, the
address and the Ready condition out. The implementation is brought by GatewayClass:
it must support per-backendRef URLRewrite filters (docs/crossplane.md, the inference
gateway, for the conformance evidence).
"""

from __future__ import annotations

from modelplane.api import InferenceGateway
from modelplane.api.inferencegateway import InferenceGatewayStatus
from modelplane.api.meta import condition, holds
from modelplane.composition.observed import NOTHING_OBSERVED, ObservedObject
from modelplane.composition.types import ComposedObject, Json
from modelplane.naming import FRONT_GATEWAY_KEY, SYSTEM_NAMESPACE, front_gateway_name
from modelplane.reconcile.result import ReconcileResult

READY = "Ready"


class GatewayResult(ReconcileResult[InferenceGatewayStatus]):
    """What one InferenceGateway reconcile returns; ready: programmed with an address."""

    __slots__ = ()


def front_gateway(gateway: InferenceGateway) -> Json:
    """The Gateway: one HTTP listener that accepts routes from every namespace."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {
            "name": front_gateway_name(gateway.metadata.name or ""),
            "namespace": SYSTEM_NAMESPACE,
        },
        "spec": {
            "gatewayClassName": gateway.spec.gateway_class_name,
            "listeners": [
                {
                    "name": "http",
                    "protocol": "HTTP",
                    "port": gateway.spec.port,
                    # Every ModelService's route lives in its own namespace.
                    "allowedRoutes": {"namespaces": {"from": "All"}},
                }
            ],
        },
    }


def _address(observed: ObservedObject, port: int) -> str | None:
    for value in observed.addresses[:1]:
        host = f"[{value}]" if ":" in value else value
        return host if port == 80 else f"{host}:{port}"
    return None


def reconcile_gateway(gateway: InferenceGateway, observed: ObservedObject | None) -> GatewayResult:
    """Compose the Gateway; Ready once it is Programmed and has an address."""
    objects = [ComposedObject(FRONT_GATEWAY_KEY, front_gateway(gateway))]
    seen = observed or NOTHING_OBSERVED
    address = _address(seen, gateway.spec.port)
    status = InferenceGatewayStatus(address=address)
    if holds(seen.conditions, "Programmed") and address:
        ready = condition(READY, True, "Programmed", f"Serving at http://{address}")
        return GatewayResult(objects, status, [ready])
    waiting = condition(
        READY,
        False,
        "Provisioning",
        f"Waiting for GatewayClass {gateway.spec.gateway_class_name} to program the Gateway",
    )
    return GatewayResult(objects, status, [waiting])
