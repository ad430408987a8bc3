"""The InferenceGateway runs on the InferenceCluster ``spec.clusterName`` names.

Upstream Modelplane v0.5 (RedbackThomson/modelplane docs/content/platform/inference-gateway.md
@ 667562db3192c878f24a511ffc083f239e2442d7): ``clusterName``, one gateway per cluster (a second
reports ClusterAlreadyHasGateway), ``serviceSelector``, ``tls.certificateRefs``,
``auth.method: APIKey`` with ``auth.apiKey.secretSelector``, ``status.endpoints``.
Envoy Gateway v1.8.3 (envoyproxy/gateway api/v1alpha1/api_key_auth_types.go): apiKeyAuth.
provider-kubernetes v1.2.1 (managementPolicies Observe; cmd/provider/main.go
--sanitize-secrets). Secrets are never copied: patchesFrom writes the values into the Object's
spec (crossplane-contrib/provider-kubernetes#223).
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api import InferenceCluster, InferenceGateway
from modelplane.api.meta import condition
from modelplane.composition.frontdoor import (
    placement_problem,
    provider_kubernetes,
    runtime_config,
    sanitize_problem,
)
from modelplane.composition.observed import ObservedObject
from modelplane.naming import FRONT_GATEWAY_KEY, SYSTEM_NAMESPACE, front_gateway_name
from modelplane.reconcile.gateway import (
    SECURITY_POLICY_KEY,
    GatewayResult,
    reconcile_gateway,
)
from modelplane.stack.components import GATEWAY_CLASS_NAME
from tests.builders import FRONT_DOOR_CONFIG, front_door_cluster, inference_gateway
from tests.composition.schemas import validate_delivered, validate_manifest

CLUSTER = InferenceCluster.model_validate(front_door_cluster())


def _gateway(**spec: Any) -> InferenceGateway:
    return InferenceGateway.model_validate(inference_gateway(**spec))


FOUND = ObservedObject(reported=True)


def _programmed(address: str = "198.51.100.20", *secrets: str) -> dict[str, ObservedObject]:
    """The Gateway programmed, its policy Ready, and the Secrets under ``secrets`` (resource
    keys) found on the cluster."""
    remote = ObservedObject(conditions=(condition("Programmed", True, ""),), addresses=(address,))
    return {
        FRONT_GATEWAY_KEY: ObservedObject(remote=remote),
        SECURITY_POLICY_KEY: ObservedObject(conditions=(condition("Ready", True, ""),)),
        **{key: FOUND for key in secrets},
    }


def _run(
    gateway: InferenceGateway,
    *,
    cluster: InferenceCluster | None = CLUSTER,
    others: tuple[InferenceGateway, ...] = (),
    keys: tuple[str, ...] = (),
    sanitize: str | None = None,
    observed: dict[str, ObservedObject] | None = None,
) -> GatewayResult:
    return reconcile_gateway(gateway, cluster, (gateway, *others), keys, sanitize, observed or {})


def _by_key(result: GatewayResult) -> dict[str, dict[str, Any]]:
    return {o.key: o.object for o in result.objects}


def test_the_gateway_is_an_object_delivered_through_the_clusters_provider_config() -> None:
    result = _run(_gateway(), observed=_programmed())
    [obj] = result.objects
    assert obj.key == FRONT_GATEWAY_KEY
    delivered = obj.object
    assert delivered["kind"] == "Object"
    assert delivered["metadata"]["namespace"] == SYSTEM_NAMESPACE
    assert delivered["spec"]["providerConfigRef"] == {
        "kind": "ClusterProviderConfig",
        "name": FRONT_DOOR_CONFIG,
    }
    assert delivered["spec"]["watch"] is True
    manifest = delivered["spec"]["forProvider"]["manifest"]
    assert manifest["metadata"] == {
        "name": front_gateway_name("default"),
        "namespace": SYSTEM_NAMESPACE,
    }
    assert manifest["spec"]["gatewayClassName"] == GATEWAY_CLASS_NAME
    assert manifest["spec"]["listeners"] == [
        {
            "name": "http",
            "protocol": "HTTP",
            "port": 80,
            "allowedRoutes": {"namespaces": {"from": "All"}},
        }
    ]
    validate_delivered(delivered)
    assert result.status.address == "198.51.100.20"
    assert result.status.to_wire()["endpoints"] == {
        "openAI": "http://198.51.100.20/v1",
        "anthropic": "http://198.51.100.20/anthropic/v1",
    }
    assert [(c.type, c.status, c.reason) for c in result.conditions] == [
        ("Ready", "True", "Programmed")
    ]


def _cluster(**kwargs: Any) -> InferenceCluster:
    return InferenceCluster.model_validate(front_door_cluster(**kwargs))


# (cluster, reason, words of the message)
PLACEMENT_REFUSALS = [
    (None, "ClusterNotFound", "spec.clusterName: InferenceCluster frontdoor does not exist"),
    (
        _cluster(implementation=None),
        "UnsupportedCluster",
        "does not declare spec.gateway.implementation EnvoyGateway",
    ),
    (_cluster(implementation="GKE"), "UnsupportedCluster", "Envoy Gateway with Envoy AI Gateway"),
    (_cluster(ready=False), "ClusterNotReady", "frontdoor is not Ready"),
    (_cluster(provider_config=None), "ClusterNotReady", "status.providerConfigRef"),
]


@pytest.mark.parametrize(("cluster", "reason", "words"), PLACEMENT_REFUSALS)
def test_a_cluster_that_cannot_run_the_front_door_is_refused(
    cluster: InferenceCluster | None, reason: str, words: str
) -> None:
    result = _run(_gateway(), cluster=cluster)
    assert result.objects == []  # nothing composed
    [ready] = result.conditions
    assert (ready.type, ready.status, ready.reason) == ("Ready", "False", reason)
    assert ready.message.startswith("spec.clusterName: ")
    assert words in ready.message
    assert not result.ready


def test_one_gateway_per_cluster_the_oldest_runs() -> None:
    older = _gateway(name="eu", created="2026-01-01T00:00:00Z")
    newer = _gateway(name="a-newer", created="2026-02-01T00:00:00Z")
    assert _run(older, others=(newer,), observed=_programmed()).ready
    refused = _run(newer, others=(older,), observed=_programmed())
    assert refused.objects == []
    [ready] = refused.conditions
    assert ready.reason == "ClusterAlreadyHasGateway"
    assert "already runs InferenceGateway eu" in ready.message
    # Same age (or none): the first by name.
    a, b = _gateway(name="a"), _gateway(name="b")
    assert placement_problem(a, CLUSTER, (a, b)) is None
    problem = placement_problem(b, CLUSTER, (a, b))
    assert problem is not None and problem.reason == "ClusterAlreadyHasGateway"
    # Another cluster is another front door.
    elsewhere = _gateway(name="c", cluster="other")
    assert placement_problem(a, CLUSTER, (a, elsewhere)) is None


def test_tls_terminates_on_an_https_listener_with_the_clusters_certificates() -> None:
    gateway = _gateway(tls={"certificateRefs": [{"name": "front-cert"}]})
    result = _run(gateway, observed=_programmed("198.51.100.20", "tls-certificate-front-cert"))
    objects = _by_key(result)
    assert sorted(objects) == [FRONT_GATEWAY_KEY, "tls-certificate-front-cert"]
    [listener] = objects[FRONT_GATEWAY_KEY]["spec"]["forProvider"]["manifest"]["spec"]["listeners"]
    assert listener["protocol"] == "HTTPS" and listener["port"] == 443
    assert listener["tls"] == {
        "mode": "Terminate",
        "certificateRefs": [{"group": "", "kind": "Secret", "name": "front-cert"}],
    }
    # The Secret beside the Gateway on the cluster is only observed: never created, changed,
    # deleted or copied, so no value passes through the Object.
    check = objects["tls-certificate-front-cert"]
    assert check["spec"]["managementPolicies"] == ["Observe"]
    assert "references" not in check["spec"]
    assert check["spec"]["forProvider"]["manifest"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "front-cert", "namespace": SYSTEM_NAMESPACE},
    }
    for obj in objects.values():
        validate_delivered(obj)
    assert result.ready
    assert result.status.endpoints is not None
    assert result.status.endpoints.open_ai == "https://198.51.100.20/v1"
    assert result.status.endpoints.anthropic == "https://198.51.100.20/anthropic/v1"


def test_a_certificate_not_on_the_cluster_is_named() -> None:
    result = _run(
        _gateway(tls={"certificateRefs": [{"name": "front-cert"}]}), observed=_programmed()
    )
    [ready] = result.conditions
    assert (ready.status, ready.reason) == ("False", "SecretNotFound")
    assert ready.message.startswith(
        "spec.tls.certificateRefs: no Secret modelplane-system/front-cert on InferenceCluster "
        "frontdoor"
    )


# spec.port, tls -> the listener's port and the published address
PORTS = [
    (None, False, 80, "198.51.100.20"),
    (None, True, 443, "198.51.100.20"),
    (8080, False, 8080, "198.51.100.20:8080"),
    (8443, True, 8443, "198.51.100.20:8443"),
    (443, False, 443, "198.51.100.20:443"),
]


@pytest.mark.parametrize(("port", "tls", "listener", "address"), PORTS)
def test_the_port_defaults_by_protocol(
    port: int | None, tls: bool, listener: int, address: str
) -> None:
    spec: dict[str, Any] = {}
    if port is not None:
        spec["port"] = port
    if tls:
        spec["tls"] = {"certificateRefs": [{"name": "c"}]}
    result = _run(_gateway(**spec), observed=_programmed())
    gateway = _by_key(result)[FRONT_GATEWAY_KEY]["spec"]["forProvider"]["manifest"]
    assert gateway["spec"]["listeners"][0]["port"] == listener
    assert result.status.address == address


AUTH = {
    "method": "APIKey",
    "apiKey": {"secretSelector": {"matchLabels": {"modelplane.ai/inference-keys": "true"}}},
}


def test_api_keys_authenticate_callers_at_the_gateway() -> None:
    found = ("caller-keys-team-a", "caller-keys-team-b")
    result = _run(
        _gateway(auth=AUTH), keys=("team-b", "team-a"), observed=_programmed("1.2.3.4", *found)
    )
    objects = _by_key(result)
    assert sorted(objects) == [
        "caller-keys-team-a",
        "caller-keys-team-b",
        FRONT_GATEWAY_KEY,
        SECURITY_POLICY_KEY,
    ]
    policy = objects[SECURITY_POLICY_KEY]["spec"]["forProvider"]["manifest"]
    copies = ["team-a", "team-b"]  # the same names in modelplane-system on the cluster
    assert policy["spec"] == {
        "targetRefs": [
            {
                "group": "gateway.networking.k8s.io",
                "kind": "Gateway",
                "name": front_gateway_name("default"),
            }
        ],
        "apiKeyAuth": {
            "credentialRefs": [{"group": "", "kind": "Secret", "name": c} for c in copies],
            # Envoy's api_key_auth strips "Bearer " from a header source (OpenAI clients);
            # Anthropic clients send x-api-key.
            "extractFrom": [{"headers": ["authorization", "x-api-key"]}],
            "forwardClientIDHeader": "x-modelplane-caller",
            "sanitize": True,  # the key never goes upstream
        },
    }
    for obj in objects.values():
        validate_delivered(obj)
    assert result.ready


def test_the_gateway_waits_for_its_security_policy_and_keys() -> None:
    """Fail closed: no Gateway serves before the policy authenticating its callers and their
    keys exist on the cluster."""
    result = _run(_gateway(auth=AUTH), keys=("k",), observed={"caller-keys-k": FOUND})
    assert FRONT_GATEWAY_KEY not in _by_key(result)
    assert SECURITY_POLICY_KEY in _by_key(result)
    assert [c.reason for c in result.conditions] == ["Provisioning"]
    policy = {SECURITY_POLICY_KEY: _programmed()[SECURITY_POLICY_KEY]}
    no_key = _run(_gateway(auth=AUTH), keys=("k",), observed=policy)
    assert FRONT_GATEWAY_KEY not in _by_key(no_key)
    [ready] = no_key.conditions
    assert ready.reason == "SecretNotFound"
    assert ready.message.startswith(
        "spec.auth.apiKey.secretSelector: no Secret modelplane-system/k"
    )


def test_auth_selecting_no_secret_lets_nobody_in() -> None:
    result = _run(_gateway(auth=AUTH), observed=_programmed())
    policy = _by_key(result)[SECURITY_POLICY_KEY]["spec"]["forProvider"]["manifest"]
    assert policy["spec"]["apiKeyAuth"]["credentialRefs"] == []
    validate_manifest(policy)
    [ready] = result.conditions
    assert (ready.status, ready.reason) == ("False", "NoCallerKeys")
    assert ready.message.startswith("spec.auth.apiKey.secretSelector: ")


@pytest.mark.parametrize(
    ("spec", "field"),
    [({"tls": {"certificateRefs": [{"name": "c"}]}}, "spec.tls"), ({"auth": AUTH}, "spec.auth")],
)
def test_no_secret_is_copied_unless_the_provider_redacts_them(
    spec: dict[str, Any], field: str
) -> None:
    result = _run(_gateway(**spec), keys=("k",), sanitize="no Provider x", observed=_programmed())
    assert result.objects == []
    [ready] = result.conditions
    assert ready.reason == "SecretsNotSanitized"
    assert ready.message.startswith(f"{field}: ") and "no Provider x" in ready.message
    assert "observed only when provider-kubernetes redacts" in ready.message
    # Without a Secret to copy, nothing waits for the provider.
    assert _run(_gateway(), sanitize="no Provider x", observed=_programmed()).ready


def _env(value: str) -> dict[str, Any]:
    config = runtime_config()
    config["spec"]["deploymentTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "SANITIZE_SECRETS", "value": value}
    ]
    return config


def _args(*args: str) -> dict[str, Any]:
    config = runtime_config()
    container = config["spec"]["deploymentTemplate"]["spec"]["template"]["spec"]["containers"][0]
    del container["env"]
    container["args"] = list(args)
    return config


OTHER_CONFIG = {**provider_kubernetes(), "spec": {"runtimeConfigRef": {"name": "default"}}}
# (provider, runtime config) -> the problem's words, or None
SANITIZE = [
    (provider_kubernetes(), runtime_config(), None),
    (provider_kubernetes(), _env("True"), None),
    (provider_kubernetes(), _args("--sanitize-secrets"), None),
    (None, runtime_config(), "no Provider crossplane-contrib-provider-kubernetes"),
    (
        OTHER_CONFIG,
        runtime_config(),
        "no spec.runtimeConfigRef.name modelplane-provider-kubernetes",
    ),
    (provider_kubernetes(), None, "does not set SANITIZE_SECRETS=true"),
    (provider_kubernetes(), _env("false"), "does not set SANITIZE_SECRETS=true"),
    (provider_kubernetes(), _args("--enable-watches"), "or --sanitize-secrets"),
]


@pytest.mark.parametrize(("provider", "config", "words"), SANITIZE)
def test_secrets_are_copied_only_with_sanitize_secrets(
    provider: dict[str, Any] | None, config: dict[str, Any] | None, words: str | None
) -> None:
    problem = sanitize_problem(provider, config)
    if words is None:
        assert problem is None
    else:
        assert problem is not None and words in problem


def test_the_package_ships_the_runtime_config_the_check_accepts() -> None:
    assert sanitize_problem(provider_kubernetes(), runtime_config()) is None
    assert provider_kubernetes()["spec"]["package"].endswith("provider-kubernetes:v1.2.1")


def test_a_cluster_turning_not_ready_keeps_the_front_door_composed_there() -> None:
    """Not Ready refuses a new gateway, but a Gateway already composed is kept (and reported):
    a cluster's readiness flapping must not delete the front door."""
    not_ready = _cluster(ready=False)
    fresh = _run(_gateway(), cluster=not_ready)
    assert fresh.objects == [] and fresh.conditions[0].reason == "ClusterNotReady"
    placed = _run(_gateway(), cluster=not_ready, observed=_programmed())
    assert [o.key for o in placed.objects] == [FRONT_GATEWAY_KEY]
    [ready] = placed.conditions
    assert (ready.status, ready.reason) == ("False", "ClusterNotReady")
    assert ready.message.startswith("spec.clusterName: ") and "keeping" in ready.message
    # A cluster gone, or no longer Envoy Gateway's, is not held.
    for gone in (None, _cluster(implementation="GKE")):
        assert _run(_gateway(), cluster=gone, observed=_programmed()).objects == []


def test_an_existing_gateway_is_kept_while_its_policy_is_not_ready() -> None:
    observed = _programmed()
    del observed[SECURITY_POLICY_KEY]
    result = _run(_gateway(auth=AUTH), keys=("k",), observed=observed)
    assert FRONT_GATEWAY_KEY in _by_key(result)
