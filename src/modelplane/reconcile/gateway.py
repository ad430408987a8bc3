"""The InferenceGateway reconcile: a Gateway of Envoy Gateway on the cluster ``spec.clusterName``.

Pure: the InferenceGateway, its cluster, every InferenceGateway (one per cluster), the names of
the caller-key Secrets its ``auth`` selects, whether provider-kubernetes keeps Secret data out
of Object status, and the observed Objects in; the Objects delivering the Gateway and its
SecurityPolicy to the cluster and observing the Secrets they name there, the status and the
Ready condition out (docs/crossplane.md, "The inference gateway").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from modelplane.api import InferenceCluster, InferenceGateway
from modelplane.api.inferencegateway import GatewayEndpoints, InferenceGatewayStatus
from modelplane.api.meta import condition, holds
from modelplane.composition.backend import EG_API
from modelplane.composition.delivery import deliver
from modelplane.composition.frontdoor import (
    composes,
    placement_problem,
    secret_check,
)
from modelplane.composition.observed import NOTHING_OBSERVED, ObservedObject
from modelplane.composition.replica import provider_config_for
from modelplane.composition.types import ComposedObject, Json
from modelplane.naming import (
    CALLER_HEADER,
    FRONT_GATEWAY_KEY,
    SYSTEM_NAMESPACE,
    dns_name,
    front_gateway_name,
)
from modelplane.reconcile.result import ReconcileResult

# The GatewayClass a cluster's stack creates for Envoy Gateway (stack/components.py).
from modelplane.stack.components import GATEWAY_CLASS_NAME

READY = "Ready"
SECURITY_POLICY_KEY = "security-policy"
CERTIFICATE_KEY_PREFIX = "tls-certificate-"
CALLER_KEYS_KEY_PREFIX = "caller-keys-"
# Where a caller's key is read, in order (envoyproxy/gateway api/v1alpha1/api_key_auth_types.go
# ExtractFrom.headers @ v1.8.3: "envoy will look for the api key in the order of the list").
# OpenAI clients send "Authorization: Bearer <key>": Envoy's api_key_auth filter strips a
# leading "Bearer " from a header key source (envoy api/envoy/extensions/filters/http/
# api_key_auth/v3/api_key_auth.proto KeySource.header), which Envoy Gateway v1.8.3's docs
# confirm (site/content/en/latest/tasks/security/apikey-auth.md: the Secret holds the bare key,
# clients may still send "Authorization: Bearer"). Anthropic clients send "x-api-key: <key>".
KEY_HEADERS = ("authorization", "x-api-key")
# Envoy AI Gateway v1.1.0 serves OpenAI under /v1 and Anthropic's Messages API under
# /anthropic/v1 (cmd/extproc/mainlib/main.go, internal/internalapi/internalapi.go
# endpointPrefixes.Anthropic "/anthropic").
OPENAI_PATH = "/v1"
ANTHROPIC_PATH = "/anthropic/v1"


class GatewayResult(ReconcileResult[InferenceGatewayStatus]):
    """What one InferenceGateway reconcile returns; ready: programmed with an address."""

    __slots__ = ()


def listener_port(gateway: InferenceGateway) -> int:
    """The listener's port: ``spec.port``, else 443 with TLS, else 80."""
    if gateway.spec.port is not None:
        return gateway.spec.port
    return 443 if gateway.spec.tls is not None else 80


def front_gateway(gateway: InferenceGateway) -> Json:
    """The Gateway: one listener (HTTPS terminating TLS with ``spec.tls``, else HTTP) that
    accepts routes from every namespace (each ModelService's route is in its own)."""
    listener: Json = {
        "name": "https" if gateway.spec.tls is not None else "http",
        "protocol": "HTTPS" if gateway.spec.tls is not None else "HTTP",
        "port": listener_port(gateway),
        "allowedRoutes": {"namespaces": {"from": "All"}},
    }
    if gateway.spec.tls is not None:
        # Gateway API v1.5.1 GatewayTLSConfig: Terminate, Secrets in the Gateway's namespace.
        listener["tls"] = {
            "mode": "Terminate",
            "certificateRefs": [
                {"group": "", "kind": "Secret", "name": ref.name}
                for ref in gateway.spec.tls.certificate_refs
            ],
        }
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {
            "name": front_gateway_name(gateway.metadata.name or ""),
            "namespace": SYSTEM_NAMESPACE,
        },
        "spec": {"gatewayClassName": GATEWAY_CLASS_NAME, "listeners": [listener]},
    }


def security_policy(gateway: InferenceGateway, key_secrets: Sequence[str]) -> Json:
    """Envoy Gateway's SecurityPolicy on the Gateway: a key per caller from the named Secrets,
    the identity forwarded in ``x-modelplane-caller`` (inside the gateway only: every backend
    removes it, naming.CALLER_HEADER), the key removed before the request goes upstream
    (envoyproxy/gateway api/v1alpha1/api_key_auth_types.go @ v1.8.3: credentialRefs,
    extractFrom, forwardClientIDHeader, sanitize)."""
    name = front_gateway_name(gateway.metadata.name or "")
    return {
        "apiVersion": EG_API,
        "kind": "SecurityPolicy",
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": name}],
            "apiKeyAuth": {
                "credentialRefs": [{"group": "", "kind": "Secret", "name": s} for s in key_secrets],
                "extractFrom": [{"headers": list(KEY_HEADERS)}],
                "forwardClientIDHeader": CALLER_HEADER,
                "sanitize": True,
            },
        },
    }


def _address(observed: ObservedObject, port: int, tls: bool) -> str | None:
    for value in observed.addresses[:1]:
        host = f"[{value}]" if ":" in value else value
        default = 443 if tls else 80
        return host if port == default else f"{host}:{port}"
    return None


def endpoints_of(address: str, tls: bool) -> GatewayEndpoints:
    """The base URLs callers use at ``address``: OpenAI's and Anthropic's."""
    base = f"{'https' if tls else 'http'}://{address}"
    return GatewayEndpoints.model_validate(
        {"openAI": f"{base}{OPENAI_PATH}", "anthropic": f"{base}{ANTHROPIC_PATH}"}
    )


def _refused(reason: str, message: str) -> GatewayResult:
    return GatewayResult([], InferenceGatewayStatus(), [condition(READY, False, reason, message)])


def reconcile_gateway(
    gateway: InferenceGateway,
    cluster: InferenceCluster | None,
    gateways: Sequence[InferenceGateway],
    key_secrets: Sequence[str],
    sanitize_problem: str | None,
    observed: Mapping[str, ObservedObject],
) -> GatewayResult:
    """Compose the Gateway on its cluster; Ready once it is Programmed and has an address.

    ``cluster`` is the InferenceCluster ``spec.clusterName`` names (None: absent), ``gateways``
    every InferenceGateway, ``key_secrets`` the names of the Secrets ``spec.auth`` selects,
    ``sanitize_problem`` why Secrets may not be copied (None: they may).
    """
    problem = placement_problem(gateway, cluster, gateways)
    # Placed once its Gateway's Object exists: a cluster turning NotReady then keeps it.
    if not composes(problem, FRONT_GATEWAY_KEY in observed) or cluster is None:
        assert problem is not None
        return _refused(problem.reason, problem.message)
    config = provider_config_for(cluster)
    assert config is not None  # placement_problem refuses a cluster without one
    spec = gateway.spec
    if (spec.tls is not None or spec.auth is not None) and sanitize_problem is not None:
        return _refused(
            "SecretsNotSanitized",
            f"spec.{'tls' if spec.tls is not None else 'auth'}: the Secrets on the cluster are "
            f"observed only when provider-kubernetes redacts them from Object status: "
            f"{sanitize_problem}",
        )
    name = gateway.metadata.name or ""
    keys = sorted(set(key_secrets))

    def obj(key: str, manifest: Json) -> Json:
        return deliver(dns_name(name, key), SYSTEM_NAMESPACE, key, manifest, config)

    objects: list[ComposedObject] = []
    # The Secrets the Gateway and its policy name, in modelplane-system on the cluster: the
    # operator's to put there (composition/frontdoor.py), observed to say whether they are.
    needed = [
        (f"{CERTIFICATE_KEY_PREFIX}{ref.name}", "spec.tls.certificateRefs", ref.name)
        for ref in (spec.tls.certificate_refs if spec.tls is not None else ())
    ]
    if spec.auth is not None:
        needed += [
            (f"{CALLER_KEYS_KEY_PREFIX}{k}", "spec.auth.apiKey.secretSelector", k) for k in keys
        ]
    for key, _, secret in needed:
        check = secret_check(
            dns_name(name, key), SYSTEM_NAMESPACE, key, (SYSTEM_NAMESPACE, secret), config
        )
        objects.append(ComposedObject(key, check))
    missing = [
        (field, secret)
        for key, field, secret in needed
        if not observed.get(key, NOTHING_OBSERVED).reported
    ]
    waiting_for_auth = False
    if spec.auth is not None:
        objects.append(
            ComposedObject(
                SECURITY_POLICY_KEY, obj(SECURITY_POLICY_KEY, security_policy(gateway, keys))
            )
        )
        # Fail closed: a new Gateway only once its SecurityPolicy and every caller-key Secret
        # exist on the cluster, so it never serves a request unauthenticated. Once the Gateway
        # exists it is kept: removing it would take the front door down.
        policy_ready = holds(
            observed.get(SECURITY_POLICY_KEY, NOTHING_OBSERVED).conditions, "Ready"
        )
        keys_missing = any(f.startswith("spec.auth") for f, _ in missing)
        waiting_for_auth = FRONT_GATEWAY_KEY not in observed and (not policy_ready or keys_missing)
    if not waiting_for_auth:
        # Watched (delivery.watched): its address is what the gateway waits for.
        objects.append(
            ComposedObject(FRONT_GATEWAY_KEY, obj(FRONT_GATEWAY_KEY, front_gateway(gateway)))
        )
    seen = observed.get(FRONT_GATEWAY_KEY, NOTHING_OBSERVED).remote or NOTHING_OBSERVED
    tls = spec.tls is not None
    address = _address(seen, listener_port(gateway), tls)
    status = InferenceGatewayStatus(
        address=address, endpoints=endpoints_of(address, tls) if address else None
    )
    if problem is not None:  # held: the cluster is not Ready, what runs there is kept
        held = condition(
            READY, False, problem.reason, f"{problem.message}; keeping the front door there"
        )
        return GatewayResult(objects, status, [held])
    if missing:
        field, secret = missing[0]
        absent = condition(
            READY,
            False,
            "SecretNotFound",
            f"{field}: no Secret {SYSTEM_NAMESPACE}/{secret} on InferenceCluster "
            f"{spec.cluster_name} (put it there; the control plane never copies a key)",
        )
        return GatewayResult(objects, status, [absent])
    if waiting_for_auth:
        waiting = condition(
            READY, False, "Provisioning", "Waiting for the SecurityPolicy before the Gateway"
        )
        return GatewayResult(objects, status, [waiting])
    if spec.auth is not None and not keys:
        # Composed all the same: with no key nobody is let in, which is what auth asks.
        no_keys = condition(
            READY,
            False,
            "NoCallerKeys",
            "spec.auth.apiKey.secretSelector: no Secret in modelplane-system on the control "
            "plane matches; every request is refused",
        )
        return GatewayResult(objects, status, [no_keys])
    if holds(seen.conditions, "Programmed") and address:
        assert status.endpoints is not None
        ready = condition(READY, True, "Programmed", f"Serving at {status.endpoints.open_ai}")
        return GatewayResult(objects, status, [ready])
    waiting = condition(
        READY,
        False,
        "Provisioning",
        f"Waiting for Envoy Gateway on InferenceCluster {spec.cluster_name} to program the Gateway",
    )
    return GatewayResult(objects, status, [waiting])
