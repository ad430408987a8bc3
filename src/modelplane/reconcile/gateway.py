"""The InferenceGateway reconcile: one Gateway of Envoy Gateway with Envoy AI Gateway.

Pure: the InferenceGateway, the controller of its GatewayClass and its observed Gateway
in; the desired Gateway, the address and the Ready condition out. Routing by model
(AIGatewayRoute) needs Envoy AI Gateway, which extends only Envoy Gateway; a GatewayClass
of any other controller is refused, nothing composed (docs/crossplane.md, "The inference
gateway").
"""

from __future__ import annotations

from modelplane.api import InferenceGateway
from modelplane.api.inferencegateway import InferenceGatewayStatus
from modelplane.api.meta import condition, holds
from modelplane.composition.observed import NOTHING_OBSERVED, ObservedObject
from modelplane.composition.types import ComposedObject, Json
from modelplane.naming import FRONT_GATEWAY_KEY, SYSTEM_NAMESPACE, front_gateway_name
from modelplane.reconcile.result import ReconcileResult

# One home for Envoy Gateway's GatewayClass controllerName: the stack installs the class
# the front door accepts, so the refusal compares against the very string it writes.
from modelplane.stack.components import ENVOY_GATEWAY_CONTROLLER

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


def reconcile_gateway(
    gateway: InferenceGateway, observed: ObservedObject | None, controller: str | None
) -> GatewayResult:
    """Compose the Gateway; Ready once it is Programmed and has an address.

    ``controller`` is the ``spec.controllerName`` of the GatewayClass named by
    ``spec.gatewayClassName``, None when no such class exists.
    """
    class_name = gateway.spec.gateway_class_name
    if controller != ENVOY_GATEWAY_CONTROLLER:
        if controller is None:
            refused = condition(
                READY, False, "GatewayClassNotFound", f"No GatewayClass {class_name}"
            )
        else:
            refused = condition(
                READY,
                False,
                "UnsupportedGatewayClass",
                f"spec.gatewayClassName: GatewayClass {class_name} belongs to {controller}; "
                f"the front door routes by model with Envoy AI Gateway, which needs "
                f"Envoy Gateway ({ENVOY_GATEWAY_CONTROLLER})",
            )
        return GatewayResult([], InferenceGatewayStatus(), [refused])
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
