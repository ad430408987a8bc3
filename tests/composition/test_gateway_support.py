"""The InferenceGateway runs on Envoy Gateway; a GatewayClass of another controller is refused.

Routing by model (AIGatewayRoute) needs Envoy AI Gateway, which extends only Envoy Gateway
(envoyproxy/ai-gateway v1.1.0); Envoy Gateway's controllerName is
``gateway.envoyproxy.io/gatewayclass-controller`` (envoyproxy/gateway
api/v1alpha1/shared_types.go GatewayControllerName @ v1.8.3).
"""

from __future__ import annotations

import pytest

from modelplane.api import InferenceGateway
from modelplane.reconcile import gateway as gateway_reconcile
from modelplane.reconcile.gateway import reconcile_gateway
from modelplane.stack import components
from modelplane.stack.components import ENVOY_GATEWAY_CONTROLLER, GATEWAY_CLASS_NAME

DEFAULT = InferenceGateway.model_validate({"metadata": {"name": "default"}})


def test_the_controller_the_refusal_checks_is_the_one_the_stack_installs() -> None:
    assert ENVOY_GATEWAY_CONTROLLER == "gateway.envoyproxy.io/gatewayclass-controller"
    # One home: the reconcile reads the stack's constant, not a copy of it.
    assert gateway_reconcile.ENVOY_GATEWAY_CONTROLLER is components.ENVOY_GATEWAY_CONTROLLER


def test_the_default_gateway_class_is_the_stacks_envoy_gateway_class() -> None:
    assert DEFAULT.spec.gateway_class_name == GATEWAY_CLASS_NAME
    assert DEFAULT.spec.port == 80
    result = reconcile_gateway(DEFAULT, None, ENVOY_GATEWAY_CONTROLLER)
    [composed] = result.objects
    assert composed.object["spec"]["gatewayClassName"] == GATEWAY_CLASS_NAME


# controller of the named GatewayClass -> (reason, words the message carries)
REFUSALS = [
    (
        "traefik.io/gateway-controller",
        "UnsupportedGatewayClass",
        "belongs to traefik.io/gateway-controller",
    ),
    (
        "networking.gke.io/gateway",
        "UnsupportedGatewayClass",
        "needs Envoy Gateway (gateway.envoyproxy.io/gatewayclass-controller)",
    ),
    (None, "GatewayClassNotFound", f"No GatewayClass {GATEWAY_CLASS_NAME}"),
]


@pytest.mark.parametrize(("controller", "reason", "words"), REFUSALS)
def test_a_gateway_class_of_another_controller_is_refused(
    controller: str | None, reason: str, words: str
) -> None:
    result = reconcile_gateway(DEFAULT, None, controller)
    assert result.objects == []  # nothing composed: no Gateway that could not route by model
    [ready] = result.conditions
    assert (ready.type, ready.status, ready.reason) == ("Ready", "False", reason)
    assert words in ready.message
    if controller is not None:
        assert ready.message.startswith("spec.gatewayClassName: ")
    assert not result.ready
