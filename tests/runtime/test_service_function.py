"""The ModelService and InferenceGateway functions over gRPC: what ``render`` composes."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import yaml

from modelplane.cli.main import main
from modelplane.naming import backend_service_name
from modelplane.stack.components import ENVOY_GATEWAY_CONTROLLER
from tests.paths import REPO

from .conftest import Stubs
from .helpers import (
    composite_ready,
    composite_status,
    conditions,
    desired,
    request,
    requirements,
)

SERVICES = REPO / "demo" / "qwen3-8b-service.yaml"


def _docs() -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all(SERVICES.read_text()) if d}


def _rendered() -> list[dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["render", "-o", "json", str(SERVICES)]) == 0
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def _of(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind]
    return found


def test_service_over_grpc_is_what_render_composes(stubs: Stubs) -> None:
    docs, rendered = _docs(), _rendered()
    xr = {**docs["ModelService"], "metadata": {**docs["ModelService"]["metadata"], "uid": "u1"}}
    first = stubs.v1.RunFunction(request(xr))
    assert set(requirements(first)) == {"inference-gateway", "endpoints"}
    assert desired(first) == {} and composite_ready(first) != "READY_TRUE"
    endpoint = {
        **docs["ModelEndpoint"],
        "status": {"routing": {"backendName": backend_service_name("qwen3-8b-hosted")}},
    }
    # Envoy AI Gateway writes Accepted on the AIGatewayRoute itself (status.conditions).
    accepted = {"status": {"conditions": [{"type": "Accepted", "status": "True"}]}}
    rsp = stubs.v1.RunFunction(
        request(
            xr,
            observed={"ai-gateway-route": accepted},
            required={"inference-gateway": [docs["InferenceGateway"]], "endpoints": [endpoint]},
        )
    )
    assert sorted(desired(rsp)) == ["ai-gateway-route", "retry-policy"]
    assert desired(rsp)["ai-gateway-route"] == _of(rendered, "AIGatewayRoute")
    assert desired(rsp)["retry-policy"] == _of(rendered, "BackendTrafficPolicy")
    expected = _of(rendered, "ModelService")["status"]
    assert composite_status(rsp)["address"] == expected["address"]
    assert composite_status(rsp)["model"] == expected["model"] == "ml-team/qwen3-8b"
    assert [c[:3] for c in conditions(rsp)] == [
        (c["type"], c["status"], c["reason"]) for c in expected["conditions"]
    ]


def test_service_without_gateway_waits(stubs: Stubs) -> None:
    xr = _docs()["ModelService"]
    rsp = stubs.v1.RunFunction(request(xr, required={"inference-gateway": [], "endpoints": []}))
    assert desired(rsp) == {}
    assert [c[:3] for c in conditions(rsp)] == [
        ("EndpointsResolved", "False", "NoEndpoints"),
        ("RoutingReady", "False", "WaitingForGateway"),
    ]


def _gateway_class(controller: str) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": "modelplane"},
        "spec": {"controllerName": controller},
    }


def test_gateway_over_grpc_is_what_render_composes(stubs: Stubs) -> None:
    gateway = _docs()["InferenceGateway"]
    rendered = _of(_rendered(), "Gateway")
    first = stubs.v1.RunFunction(request(gateway))
    # The GatewayClass is read first: nothing is composed before its controller is known.
    assert set(requirements(first)) == {"gateway-class"} and desired(first) == {}
    observed = {
        "gateway": {
            **rendered,
            "status": {
                "addresses": [{"value": "198.51.100.20"}],
                "conditions": [{"type": "Programmed", "status": "True"}],
            },
        }
    }
    rsp = stubs.v1.RunFunction(
        request(
            gateway,
            observed=observed,
            required={"gateway-class": [_gateway_class(ENVOY_GATEWAY_CONTROLLER)]},
        )
    )
    assert desired(rsp)["gateway"] == rendered
    assert composite_status(rsp)["address"] == "198.51.100.20"
    assert [c[:3] for c in conditions(rsp)] == [("Ready", "True", "Programmed")]


def test_gateway_of_another_controller_is_refused_over_grpc(stubs: Stubs) -> None:
    gateway = _docs()["InferenceGateway"]
    other = {"gateway-class": [_gateway_class("traefik.io/gateway-controller")]}
    rsp = stubs.v1.RunFunction(request(gateway, required=other))
    assert desired(rsp) == {}
    assert [c[:3] for c in conditions(rsp)] == [("Ready", "False", "UnsupportedGatewayClass")]
    missing = stubs.v1.RunFunction(request(gateway, required={"gateway-class": []}))
    assert [c[:3] for c in conditions(missing)] == [("Ready", "False", "GatewayClassNotFound")]
