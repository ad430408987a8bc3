"""TLS from the front door to the inference clusters' own gateways: the HTTPS listener, the
endpoints' origin, the front door's Backend and the plaintext that remains said, never silent
(docs/crossplane.md, "TLS to the inference clusters' gateways")."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api import InferenceCluster, InferenceGateway, ModelEndpoint, ModelService
from modelplane.composition.observed import ObservedObject
from modelplane.naming import CLUSTER_LABEL, SERVICE_ROUTE_KEY
from modelplane.reconcile.cluster import cluster_stack_plan, provider_config
from modelplane.reconcile.endpoint import reconcile_endpoint
from modelplane.reconcile.service import MAX_TRUST_BUNDLES, ServiceResult, gateway_key
from modelplane.reconcile.service import reconcile_service as reconcile_on_gateways
from modelplane.reconcile.stack import component_keys, compose_stack
from tests.builders import front_door_cluster, inference_gateway
from tests.reconcile.feedback import World
from tests.reconcile.fleet import cluster as gpu_cluster
from tests.reconcile.fleet import deployment

from .routes import ACCEPTED, delivered
from .schemas import validate_manifest

HOST = "gpu-a.example.com"
SECRET = "gateway-tls"
# Not a real certificate: the schema checks the PEM shape (IC-16), nothing decodes it.
CA = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ29kZQ==\n-----END CERTIFICATE-----\n"


def tls_cluster(
    name: str = "gpu-a",
    *,
    host: str = HOST,
    ca: str | None = CA,
    address: str | None = "203.0.113.10",
) -> dict[str, Any]:
    """A Managed Envoy Gateway cluster serving HTTPS as ``host``, trusting ``ca`` (None: the
    system's CAs), publishing ``address``."""
    out = gpu_cluster(name, gateway=address)
    tls: dict[str, Any] = {"hostname": host, "certificateRef": {"name": SECRET}}
    if ca is not None:
        tls["caCertificate"] = ca
    out["spec"]["gateway"] = {"implementation": "EnvoyGateway", "tls": tls}
    return out


def stack_gateway(manifest: dict[str, Any]) -> dict[str, Any]:
    """The Gateway a cluster's Managed stack delivers, valid against Gateway API v1.5.1's CRD."""
    cluster = InferenceCluster.model_validate(manifest)
    mode, plan = cluster_stack_plan(cluster, ())
    everything = {
        k: ObservedObject(reported=True) for c in plan.components for k in component_keys(c)
    }
    config = provider_config(cluster)
    result = compose_stack(cluster.metadata.name or "", mode, plan, everything, config)
    (gateway,) = [
        o.object["spec"]["forProvider"]["manifest"]
        for o in result.objects
        if o.key == "stack-inference-gateway-gateway"
    ]
    validate_manifest(gateway)
    return gateway


# --- The cluster's Gateway -----------------------------------------------------------------


def test_tls_gives_the_clusters_gateway_one_https_listener_with_the_certificate() -> None:
    # Gateway API v1.5.1 apis/v1/gateway_types.go ListenerTLSConfig: Terminate with Secrets in
    # the Gateway's namespace (modelplane-system, where the operator puts it).
    assert stack_gateway(tls_cluster())["spec"]["listeners"] == [
        {
            "name": "https",
            "protocol": "HTTPS",
            "port": 443,
            "tls": {
                "mode": "Terminate",
                "certificateRefs": [{"group": "", "kind": "Secret", "name": SECRET}],
            },
            "allowedRoutes": {"namespaces": {"from": "All"}},
        }
    ]


def test_without_tls_the_clusters_gateway_stays_plain_http() -> None:
    plain = gpu_cluster("gpu-b")
    plain["spec"]["gateway"] = {"implementation": "EnvoyGateway"}
    [listener] = stack_gateway(plain)["spec"]["listeners"]
    assert (listener["protocol"], listener["port"], "tls" in listener) == ("HTTP", 80, False)


# --- The endpoints' origin -----------------------------------------------------------------


def test_a_replica_on_a_tls_cluster_is_reached_at_https_hostname() -> None:
    world = World([deployment(replicas=2)], [tls_cluster(), gpu_cluster("gpu-b")], compose=False)
    world.settle()
    origins = {e["metadata"]["labels"][CLUSTER_LABEL]: e["spec"]["origin"] for e in world.endpoints}
    # The TLS cluster's by the certificate's name; the other's still plain at its address.
    assert origins == {"gpu-a": f"https://{HOST}", "gpu-b": "http://203.0.113.10"}


# --- The front door ------------------------------------------------------------------------

GATEWAY = InferenceGateway.model_validate(inference_gateway(address="198.51.100.20"))
SERVICE = ModelService.model_validate(
    {
        "metadata": {"name": "qwen", "namespace": "ml-team"},
        "spec": {"endpoints": [{"selector": {"matchLabels": {"model": "qwen"}}}]},
    }
)


def replica_endpoint(name: str, cluster: str, origin: str) -> ModelEndpoint:
    """A replica's endpoint on ``cluster``, its backend published."""
    labels = {"model": "qwen", CLUSTER_LABEL: cluster}
    resource = ModelEndpoint.model_validate(
        {
            "metadata": {"name": name, "namespace": "ml-team", "labels": labels},
            "spec": {"origin": origin, "model": "Qwen/Qwen3-8B", "api": {"prefix": "/v1"}},
        }
    )
    return resource.model_copy(update={"status": reconcile_endpoint(resource).status})


def route(endpoints: list[ModelEndpoint], *clusters: dict[str, Any]) -> ServiceResult:
    by_name = {
        c.metadata.name or "": c
        for c in (InferenceCluster.model_validate(m) for m in (front_door_cluster(), *clusters))
    }
    observed = {gateway_key(GATEWAY, SERVICE_ROUTE_KEY): ObservedObject(remote=ACCEPTED)}
    return reconcile_on_gateways(SERVICE, endpoints, [GATEWAY], by_name, None, observed)


def of_kind(result: ServiceResult, kind: str) -> list[dict[str, Any]]:
    """The delivered manifests of ``kind``, each valid against its released schema."""
    found = [m for m in delivered(result).values() if m["kind"] == kind]
    for manifest in found:
        validate_manifest(manifest)
    return found


def test_the_front_door_connects_to_the_address_and_verifies_the_hostname_against_the_ca() -> None:
    result = route([replica_endpoint("qwen-a", "gpu-a", f"https://{HOST}")], tls_cluster())
    [backend] = of_kind(result, "Backend")
    [config_map] = of_kind(result, "ConfigMap")
    # envoyproxy/gateway api/v1alpha1/backend_types.go @ v1.8.3: an ip endpoint at the
    # published address; tls.sni is the SNI and, with no subjectAltNames, the one SAN verified
    # (internal/xds/translator/translator.go buildValidationContext); caCertificateRefs are
    # local ConfigMaps read at key ca.crt (internal/gatewayapi/helpers.go CACertKey).
    assert backend["spec"] == {
        "endpoints": [{"ip": {"address": "203.0.113.10", "port": 443}}],
        "tls": {
            "sni": HOST,
            "caCertificateRefs": [
                {"group": "", "kind": "ConfigMap", "name": config_map["metadata"]["name"]}
            ],
        },
    }
    assert config_map["data"] == {"ca.crt": CA}
    assert config_map["metadata"]["namespace"] == backend["metadata"]["namespace"] == "ml-team"
    condition = {c.type: c for c in result.conditions}["RoutingReady"]
    assert (condition.status, "plain HTTP" in (condition.message or "")) == ("True", False)


def test_without_a_ca_the_system_cas_verify_and_a_hostname_address_is_an_fqdn_endpoint() -> None:
    cluster = tls_cluster(ca=None, address="lb.elb.example.net")
    result = route([replica_endpoint("qwen-a", "gpu-a", f"https://{HOST}")], cluster)
    [backend] = of_kind(result, "Backend")
    assert backend["spec"] == {
        "endpoints": [{"fqdn": {"hostname": "lb.elb.example.net", "port": 443}}],
        "tls": {"sni": HOST, "wellKnownCACertificates": "System"},
    }
    assert of_kind(result, "ConfigMap") == []


def test_before_an_address_is_published_the_hostname_is_the_endpoint() -> None:
    result = route(
        [replica_endpoint("qwen-a", "gpu-a", f"https://{HOST}")], tls_cluster(address=None)
    )
    [backend] = of_kind(result, "Backend")
    assert backend["spec"]["endpoints"] == [{"fqdn": {"hostname": HOST, "port": 443}}]
    assert backend["spec"]["tls"]["sni"] == HOST


@pytest.mark.parametrize(
    ("origin", "why"),
    [
        ("https://other.example.com", "not the cluster's hostname"),
        ("http://203.0.113.10", "plain http"),
    ],
)
def test_only_the_clusters_own_https_hostname_goes_to_its_gateway(origin: str, why: str) -> None:
    [backend] = of_kind(route([replica_endpoint("e", "gpu-a", origin)], tls_cluster()), "Backend")
    host = origin.split("://")[1]
    assert backend["spec"]["endpoints"][0] in (
        {"fqdn": {"hostname": host, "port": 443}},
        {"ip": {"address": host, "port": 80}},
    ), why


def test_clusters_sharing_a_ca_share_one_config_map() -> None:
    endpoints = [
        replica_endpoint("qwen-a", "gpu-a", f"https://{HOST}"),
        replica_endpoint("qwen-c", "gpu-c", "https://gpu-c.example.com"),
    ]
    result = route(endpoints, tls_cluster(), tls_cluster("gpu-c", host="gpu-c.example.com"))
    [config_map] = of_kind(result, "ConfigMap")
    refs = {b["spec"]["tls"]["caCertificateRefs"][0]["name"] for b in of_kind(result, "Backend")}
    assert refs == {config_map["metadata"]["name"]}


def _ca(i: int) -> str:
    return (
        f"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU{i:04d}==\n-----END CERTIFICATE-----\n"
    )


def test_a_route_trusts_at_most_four_ca_bundles_and_says_which_endpoints_are_left_out() -> None:
    n = MAX_TRUST_BUNDLES + 1
    clusters = [tls_cluster(f"gpu-{i}", host=f"gpu-{i}.example.com", ca=_ca(i)) for i in range(n)]
    endpoints = [
        replica_endpoint(f"qwen-{i}", f"gpu-{i}", f"https://gpu-{i}.example.com") for i in range(n)
    ]
    result = route(endpoints, *clusters)
    assert len(of_kind(result, "ConfigMap")) == MAX_TRUST_BUNDLES
    assert [
        b["metadata"]["labels"]["modelplane.ai/endpoint"] for b in of_kind(result, "Backend")
    ] == [f"qwen-{i}" for i in range(MAX_TRUST_BUNDLES)]
    assert any(
        e.severity == "Warning" and f"not routed: qwen-{MAX_TRUST_BUNDLES}" in e.message
        for e in result.events
    )


def test_plaintext_clusters_are_named_in_routing_ready() -> None:
    endpoints = [
        replica_endpoint("qwen-a", "gpu-a", f"https://{HOST}"),
        replica_endpoint("qwen-b", "gpu-b", "http://203.0.113.11"),
    ]
    result = route(endpoints, tls_cluster(), gpu_cluster("gpu-b", gateway="203.0.113.11"))
    condition = {c.type: c for c in result.conditions}["RoutingReady"]
    assert condition.status == "True"  # said, not refused: plain HTTP is allowed
    assert (condition.message or "").endswith(
        "; 1 of 2 reached over plain HTTP: qwen-b (InferenceCluster gpu-b)"
    )


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 6), st.booleans()), min_size=1, max_size=8))
def test_https_is_never_plaintext_and_every_trusted_ca_is_composed(
    shapes: list[tuple[bool, int, bool]],
) -> None:
    """Whatever the clusters (TLS or not, which CA, an address or none): a Backend for an https
    origin always verifies TLS, one for http never does, and every ConfigMap a Backend trusts is
    composed beside it, at most MAX_TRUST_BUNDLES of them."""
    clusters, endpoints = [], []
    for i, (tls, ca, published) in enumerate(shapes):
        name, host = f"gpu-{i}", f"gpu-{i}.example.com"
        address = "203.0.113.10" if published else None
        if tls:
            clusters.append(
                tls_cluster(name, host=host, ca=_ca(ca) if ca else None, address=address)
            )
            endpoints.append(replica_endpoint(f"qwen-{i}", name, f"https://{host}"))
        else:
            clusters.append(gpu_cluster(name, gateway=address))
            endpoints.append(replica_endpoint(f"qwen-{i}", name, "http://203.0.113.11"))
    result = route(endpoints, *clusters)
    manifests = delivered(result).values()
    composed = {m["metadata"]["name"] for m in manifests if m["kind"] == "ConfigMap"}
    assert len(composed) <= MAX_TRUST_BUNDLES
    origins = {e.metadata.name: e.spec.origin for e in endpoints}
    for backend in (m for m in manifests if m["kind"] == "Backend"):
        origin = origins[backend["metadata"]["labels"]["modelplane.ai/endpoint"]]
        tls = backend["spec"].get("tls")
        assert (tls is not None) == origin.startswith("https://")
        if tls is not None:
            assert tls["sni"] == origin.removeprefix("https://")
            refs = {r["name"] for r in tls.get("caCertificateRefs", ())}
            assert refs <= composed
