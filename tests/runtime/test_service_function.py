"""The ModelService and InferenceGateway functions over gRPC: what ``render`` composes, and no
Secret value in anything they write.

The gateway function reads the caller-key Secrets its ``auth`` selects (Crossplane hands it
their data as required resources); only their names may leave it.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
from typing import Any

import yaml

from modelplane.cli.main import main
from modelplane.composition.frontdoor import provider_kubernetes, runtime_config
from modelplane.naming import backend_service_name
from tests.builders import FRONT_DOOR_CONFIG, front_door_cluster
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
# provider-kubernetes as package/install/provider-kubernetes.yaml installs it.
SANITIZED = {
    "provider-kubernetes": [provider_kubernetes()],
    "provider-kubernetes-runtime-config": [runtime_config()],
}
# Secret values no written object, status, condition or event may carry.
CALLER_KEY = "sk-caller-fixture-0123456789"
PROVIDER_KEY = "sk-provider-fixture-abcdef"


def _docs() -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all(SERVICES.read_text()) if d}


def _rendered() -> list[dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["render", "-o", "json", str(SERVICES)]) == 0
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def _cluster() -> dict[str, Any]:
    """The demo's front door cluster as its function publishes it."""
    cluster = _docs()["InferenceCluster"]
    published = front_door_cluster(provider_config=FRONT_DOOR_CONFIG)
    return {**cluster, "status": published["status"]}


def _objects_of(rendered: list[dict[str, Any]], owner: str) -> dict[str, dict[str, Any]]:
    """The Objects render prints for one composite, by resource key."""
    return {
        o["metadata"]["annotations"]["crossplane.io/composition-resource-name"]: o
        for o in rendered
        if o["kind"] == "Object" and o["metadata"]["name"].startswith(owner)
    }


def _with_config(objects: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``objects`` through the provider config the function reads from the cluster's status
    (render assumes the one it derives)."""
    out = {}
    for key, obj in objects.items():
        spec = {**obj["spec"], "providerConfigRef": {**obj["spec"]["providerConfigRef"]}}
        spec["providerConfigRef"]["name"] = FRONT_DOOR_CONFIG
        out[key] = {**obj, "spec": spec}
    return out


def _reported(obj: dict[str, Any], remote_status: dict[str, Any]) -> dict[str, Any]:
    """An Object as provider-kubernetes reports it: its manifest, with the status the
    remote object's controller wrote, under status.atProvider."""
    remote = {**obj["spec"]["forProvider"]["manifest"], "status": remote_status}
    return {**obj, "status": {"atProvider": {"manifest": remote}}}


def _programmed(gateway_object: dict[str, Any]) -> dict[str, Any]:
    """The Gateway's Object as the provider reports it once Envoy Gateway programmed it."""
    return _reported(
        gateway_object,
        {
            "addresses": [{"value": "198.51.100.20"}],
            "conditions": [{"type": "Programmed", "status": "True"}],
        },
    )


def _observed_accepted(obj: dict[str, Any]) -> dict[str, Any]:
    """An Object whose remote object Envoy AI Gateway marked Accepted (status.conditions)."""
    return _reported(obj, {"conditions": [{"type": "Accepted", "status": "True"}]})


def test_gateway_over_grpc_is_what_render_composes(stubs: Stubs) -> None:
    gateway = _docs()["InferenceGateway"]
    rendered = _rendered()
    first = stubs.v1.RunFunction(request(gateway))
    # Its cluster, every gateway and provider-kubernetes are read first: nothing is composed
    # before the cluster is known.
    assert set(requirements(first)) == {
        "gateway-cluster",
        "inference-gateways",
        "provider-kubernetes",
        "provider-kubernetes-runtime-config",
    }
    assert desired(first) == {}
    [front] = _with_config(_objects_of(rendered, "default-gateway")).values()
    required = {"gateway-cluster": [_cluster()], "inference-gateways": [gateway], **SANITIZED}
    rsp = stubs.v1.RunFunction(
        request(gateway, observed={"gateway": _programmed(front)}, required=required)
    )
    assert desired(rsp) == {"gateway": front}
    status = composite_status(rsp)
    assert status["address"] == "198.51.100.20"
    assert status["endpoints"] == {
        "openAI": "http://198.51.100.20/v1",
        "anthropic": "http://198.51.100.20/anthropic/v1",
    }
    assert [c[:3] for c in conditions(rsp)] == [("Ready", "True", "Programmed")]


def test_gateway_on_a_missing_cluster_is_refused_over_grpc(stubs: Stubs) -> None:
    gateway = _docs()["InferenceGateway"]
    required = {"gateway-cluster": [], "inference-gateways": [gateway], **SANITIZED}
    rsp = stubs.v1.RunFunction(request(gateway, required=required))
    assert desired(rsp) == {}
    [ready] = conditions(rsp)
    assert ready[:3] == ("Ready", "False", "ClusterNotFound")
    assert ready[3].startswith("spec.clusterName: ")


def test_service_over_grpc_is_what_render_composes(stubs: Stubs) -> None:
    docs, rendered = _docs(), _rendered()
    xr = {**docs["ModelService"], "metadata": {**docs["ModelService"]["metadata"], "uid": "u1"}}
    first = stubs.v1.RunFunction(request(xr))
    assert set(requirements(first)) == {
        "inference-gateways",
        "clusters",
        "provider-kubernetes",
        "provider-kubernetes-runtime-config",
        "endpoints",
    }
    assert desired(first) == {} and composite_ready(first) != "READY_TRUE"
    endpoint = {
        **docs["ModelEndpoint"],
        "status": {"routing": {"backendName": backend_service_name("qwen3-8b-hosted")}},
    }
    gateway = {**docs["InferenceGateway"], "status": {"address": "198.51.100.20"}}
    expected = _with_config(_objects_of(rendered, "qwen3-8b-"))
    # Envoy AI Gateway writes Accepted on the AIGatewayRoute itself (status.conditions).
    accepted = _observed_accepted(expected["default-ai-gateway-route"])
    required = {
        "inference-gateways": [gateway],
        "clusters": [_cluster()],
        "endpoints": [endpoint],
        **SANITIZED,
    }
    # The provider's key is found in ml-team on the cluster (observed, never copied).
    check = expected["default-credential-hosted-provider-key"]
    found = {
        **check,
        "status": {"atProvider": {"manifest": check["spec"]["forProvider"]["manifest"]}},
    }
    # Envoy AI Gateway has accepted the key's BackendSecurityPolicy (its status.conditions),
    # so the route names the provider's backend.
    policy_accepted = _observed_accepted(
        expected["default-backend-security-policy-qwen3-8b-hosted"]
    )
    observed = {
        "default-ai-gateway-route": accepted,
        "default-credential-hosted-provider-key": found,
        "default-backend-security-policy-qwen3-8b-hosted": policy_accepted,
    }
    rsp = stubs.v1.RunFunction(request(xr, observed=observed, required=required))
    assert desired(rsp) == expected
    status = [o for o in rendered if o["kind"] == "ModelService"][0]["status"]
    assert composite_status(rsp)["address"] == status["address"] == "http://198.51.100.20"
    assert composite_status(rsp)["model"] == status["model"] == "ml-team/qwen3-8b"
    assert [c[:3] for c in conditions(rsp)] == [
        (c["type"], c["status"], c["reason"]) for c in status["conditions"]
    ]


def test_service_without_gateway_waits(stubs: Stubs) -> None:
    xr = _docs()["ModelService"]
    required = {"inference-gateways": [], "clusters": [], "endpoints": [], **SANITIZED}
    rsp = stubs.v1.RunFunction(request(xr, required=required))
    assert desired(rsp) == {}
    assert [c[:3] for c in conditions(rsp)] == [
        ("EndpointsResolved", "False", "NoEndpoints"),
        ("RoutingReady", "False", "WaitingForGateway"),
    ]


def _secret(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {"keys": "callers"}},
        "type": "Opaque",
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def _leaks(rsp: Any) -> list[str]:
    """Every fixture secret value (plain or base64) found in anything the response writes."""
    text = str(rsp)
    values = (CALLER_KEY, PROVIDER_KEY)
    return [
        v for v in (*values, *(base64.b64encode(v.encode()).decode() for v in values)) if v in text
    ]


def test_no_secret_value_leaves_the_functions(stubs: Stubs) -> None:
    """The caller keys arrive as required resources; every desired object, the status, the
    conditions and the events carry names only: no Secret is copied, each is observed where it
    is needed."""
    docs = _docs()
    gateway = {
        **docs["InferenceGateway"],
        "spec": {
            "clusterName": "frontdoor",
            "tls": {"certificateRefs": [{"name": "front-cert"}]},
            "auth": {
                "method": "APIKey",
                "apiKey": {"secretSelector": {"matchLabels": {"keys": "callers"}}},
            },
        },
    }
    keys = _secret("callers", "modelplane-system", alice=CALLER_KEY)
    required = {
        "gateway-cluster": [_cluster()],
        "inference-gateways": [gateway],
        "caller-keys": [keys],
        **SANITIZED,
    }
    first = stubs.v1.RunFunction(request(gateway, required=required))
    selector = requirements(first)["caller-keys"]
    assert selector["match_labels"] == {"labels": {"keys": "callers"}}
    assert (selector["kind"], selector["namespace"]) == ("Secret", "modelplane-system")
    # The policy Ready and the keys' Secret found on the cluster, as the provider reports it
    # with SANITIZE_SECRETS: data redacted.
    policy = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    redacted = {
        "status": {
            "atProvider": {
                "manifest": {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "callers", "namespace": "modelplane-system"},
                    "data": {"redacted": None},
                }
            }
        }
    }
    observed = {"security-policy": policy, "caller-keys-callers": redacted}
    rsp = stubs.v1.RunFunction(request(gateway, required=required, observed=observed))
    assert {
        "caller-keys-callers",
        "tls-certificate-front-cert",
        "security-policy",
        "gateway",
    } <= set(desired(rsp))
    assert _leaks(rsp) == []
    endpoint = {
        **docs["ModelEndpoint"],
        "status": {"routing": {"backendName": backend_service_name("qwen3-8b-hosted")}},
    }
    service_required = {
        "inference-gateways": [gateway],
        "clusters": [_cluster()],
        "endpoints": [endpoint],
        **SANITIZED,
    }
    service = stubs.v1.RunFunction(request(docs["ModelService"], required=service_required))
    assert any(k.startswith("default-credential-") for k in desired(service))
    assert _leaks(service) == []
