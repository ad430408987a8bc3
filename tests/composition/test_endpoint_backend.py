"""A ModelEndpoint is routable: its Backend, AIServiceBackend and (keyed) BackendSecurityPolicy,
which each ModelService selecting it composes on its gateways' clusters
(tests/composition/test_service_delivery.py).

Envoy Gateway v1.8.3 Backend (api/v1alpha1/backend_types.go), Envoy AI Gateway v1.1.0
AIServiceBackend and BackendSecurityPolicy (api/v1beta1/ai_service_backend.go,
backendsecurity_policy.go: the Secret's data key is apiKey); every object is validated
against the released CRD in ../shared/schemas.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import ModelEndpoint
from modelplane.composition.backend import (
    InvalidURL,
    ai_service_backend,
    backend_security_policy,
    eg_backend,
    parse_origin,
    parse_target,
)
from modelplane.naming import backend_service_name
from modelplane.reconcile.endpoint import reconcile_endpoint

from .schemas import validate_manifest


def backend_objects(given: ModelEndpoint) -> list[dict[str, Any]]:
    """The Backend, AIServiceBackend and (keyed) BackendSecurityPolicy of ``given``, as a
    service composes them (under the endpoint's own names)."""
    namespace, name = given.metadata.namespace or "default", given.metadata.name or ""
    spec = given.spec
    out = [
        eg_backend(namespace, name, parse_origin(spec.origin)),
        ai_service_backend(namespace, name, spec.api.schema_, spec.api.prefix),
    ]
    if spec.credential is not None:
        secret = spec.credential.api_key.secret_ref.name
        out.append(backend_security_policy(namespace, name, spec.api.schema_, secret))
    return out


def endpoint(
    origin: str, name: str = "openai-overflow", namespace: str = "ml-team"
) -> ModelEndpoint:
    """A hand-written ModelEndpoint."""
    return ModelEndpoint.model_validate(
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"origin": origin, "model": "gpt-4o-mini"},
        }
    )


# url, host, port, addressType
VALID = [
    ("https://api.openai.com/v1", "api.openai.com", 443, "FQDN"),
    ("http://inference.example.com/v1", "inference.example.com", 80, "FQDN"),
    ("HTTPS://API.Example.COM:8443/v1", "api.example.com", 8443, "FQDN"),
    ("http://203.0.113.7/ml-team/llama-3-1-8b-a1b2c/v1", "203.0.113.7", 80, "IPv4"),
    ("http://10.0.0.1:8080/v1", "10.0.0.1", 8080, "IPv4"),
    ("http://[2001:db8::1]:8000/v1", "2001:db8::1", 8000, "IPv6"),
    ("http://[2001:db8::2]/v1", "2001:db8::2", 80, "IPv6"),
    # Next to the ranges the API server refuses, and the private ranges: accepted.
    ("http://126.255.255.255/v1", "126.255.255.255", 80, "IPv4"),
    ("http://128.0.0.1/v1", "128.0.0.1", 80, "IPv4"),
    ("http://169.253.255.255/v1", "169.253.255.255", 80, "IPv4"),
    ("http://224.0.1.1/v1", "224.0.1.1", 80, "IPv4"),
    ("http://192.168.1.20:8000/v1", "192.168.1.20", 8000, "IPv4"),
    ("http://172.16.0.5/v1", "172.16.0.5", 80, "IPv4"),
    ("http://[fd00::5]:8000/v1", "fd00::5", 8000, "IPv6"),
    ("http://[fec0::1]/v1", "fec0::1", 80, "IPv6"),
    ("http://[ff05::1]/v1", "ff05::1", 80, "IPv6"),
]

# url, the words the message must contain
INVALID = [
    ("ftp://files.example.com/model", "scheme must be http or https"),
    ("api.openai.com/v1", "scheme must be http or https"),
    ("https:///v1", "has no host"),
    ("http://bad_host.example.com/v1", "not a valid host name"),
    ("http://host.example.com:99999/v1", "not a valid URL"),
    ("http://host.example.com:0/v1", "port 0"),
    ("https://user:secret@api.example.com/v1", "credentials"),
    ("http://[2001:db8::1/v1", "not a valid URL"),
    # BackendTLSPolicy validation.hostname cannot be an IP: TLS to it is unverifiable.
    ("https://[2001:db8::2]/v1", "https needs a host name"),
    ("https://203.0.113.7/v1", "https needs a host name"),
]

# Hosts the API server refuses as EndpointSlice addresses, one row per class, IPv4 and IPv6:
# url, the words the message must contain. kubernetes pkg/apis/core/validation
# ValidateEndpointIP, which pkg/apis/discovery/validation runs on IPv4 and IPv6 addresses,
# refuses unspecified, loopback, link-local and link-local multicast IPs by Go's net.IP
# classes (kubernetes/api core/v1 EndpointAddress.ip: "May not be loopback (127.0.0.0/8 or
# ::1), link-local (169.254.0.0/16 or fe80::/10), or link-local multicast (224.0.0.0/24 or
# ff02::/16)"). An IPv6 slice address must have no IPv4 form (IsValidIPv6Address: To4() ==
# nil, inlined into the discovery validation by kubernetes/apimachinery 8aa42c4d), so an
# IPv4-mapped IPv6 address is refused whatever its IPv4 address; Go's parser knows no zones.
API_REFUSED = [
    ("http://0.0.0.0:8000/v1", "0.0.0.0 is unspecified"),
    ("http://[::]:8000/v1", ":: is unspecified"),
    ("http://127.0.0.1:8000/v1", "127.0.0.1 is in the loopback range"),
    ("http://127.255.0.9/v1", "loopback range (127.0.0.0/8, ::1)"),
    ("http://[::1]:8000/v1", "::1 is in the loopback range"),
    ("http://169.254.169.254/v1", "169.254.169.254 is in the link-local range"),
    ("http://[fe80::1]/v1", "fe80::1 is in the link-local range"),
    ("http://[febf:ffff::1]/v1", "link-local range (169.254.0.0/16, fe80::/10)"),
    ("http://224.0.0.251/v1", "224.0.0.251 is in the link-local multicast range"),
    ("http://[ff02::fb]/v1", "ff02::fb is in the link-local multicast range"),
    # Go's IsLinkLocalMulticast reads the scope nibble only: a transient ff12:: is refused too.
    ("http://[ff12::1]/v1", "link-local multicast range"),
    ("http://[::ffff:127.0.0.1]/v1", "IPv4-mapped IPv6 address"),
    ("http://[::ffff:203.0.113.7]/v1", "write 203.0.113.7"),
    ("http://[fe80::1%25eth0]/v1", "with a zone"),
    ("http://[2001:db8::1%25eth0]/v1", "with a zone"),
]


KEY = "sk-fixture-0123456789abcdef"  # a key value that must never appear in any output


def origin_of(url: str) -> str:
    """The origin of a table URL: scheme and authority, no path."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@pytest.mark.parametrize(("url", "host", "port", "address_type"), VALID)
def test_backend_points_at_the_origin(url: str, host: str, port: int, address_type: str) -> None:
    given_endpoint = endpoint(origin_of(url))
    result = reconcile_endpoint(given_endpoint)
    assert result.objects == []  # composed by the services selecting it
    backend, ai_backend = backend_objects(given_endpoint)
    name = backend_service_name("openai-overflow")
    assert backend["kind"] == "Backend" and backend["metadata"]["name"] == name
    kind = "fqdn" if address_type == "FQDN" else "ip"
    field = "hostname" if kind == "fqdn" else "address"
    assert backend["spec"]["endpoints"] == [{kind: {field: host, "port": port}}]
    # https: TLS with the host as SNI, verified against the system CAs; http: none.
    if url.lower().startswith("https"):
        assert backend["spec"]["tls"] == {"sni": host, "wellKnownCACertificates": "System"}
    else:
        assert "tls" not in backend["spec"]
    # AI Gateway v1.1.0 accepts only an Envoy Gateway Backend (the CRD's CEL rule).
    assert ai_backend["spec"]["backendRef"] == {
        "group": "gateway.envoyproxy.io",
        "kind": "Backend",
        "name": name,
    }
    assert ai_backend["spec"]["schema"] == {"name": "OpenAI", "prefix": "/v1"}
    assert result.status.routing is not None and result.status.routing.backend_name == name
    assert [(c.type, c.status, c.reason) for c in result.conditions] == [
        ("RoutingReady", "True", "BackendReady")
    ]
    for composed in (backend, ai_backend):
        validate_manifest(composed)


@pytest.mark.parametrize(
    ("schema", "policy_type", "field"),
    [("OpenAI", "APIKey", "apiKey"), ("Anthropic", "AnthropicAPIKey", "anthropicAPIKey")],
)
def test_credential_names_the_secret_and_never_copies_the_key(
    schema: str, policy_type: str, field: str
) -> None:
    given_endpoint = ModelEndpoint.model_validate(
        {
            "metadata": {"name": "together", "namespace": "ml-team"},
            "spec": {
                "origin": "https://api.together.xyz",
                "api": {"schema": schema, "prefix": "/v1"},
                "model": "Qwen/Qwen3-8B",
                "credential": {"apiKey": {"secretRef": {"name": "together-key"}}},
            },
        }
    )
    composed = backend_objects(given_endpoint)
    policy = composed[2]
    assert policy["kind"] == "BackendSecurityPolicy"
    assert policy["spec"]["type"] == policy_type
    assert policy["spec"][field] == {"secretRef": {"name": "together-key", "namespace": "ml-team"}}
    assert policy["spec"]["targetRefs"] == [
        {
            "group": "aigateway.envoyproxy.io",
            "kind": "AIServiceBackend",
            "name": backend_service_name("together"),
        }
    ]
    assert composed[1]["spec"]["schema"]["name"] == schema
    for obj in composed:
        validate_manifest(obj)


@pytest.mark.parametrize(("url", "words"), INVALID)
def test_invalid_origin_composes_nothing_and_warns(url: str, words: str) -> None:
    result = reconcile_endpoint(endpoint(url.removesuffix("/v1").removesuffix("/model")))
    assert result.objects == []
    (routing,) = result.conditions
    assert (routing.type, routing.status, routing.reason) == (
        "RoutingReady",
        "False",
        "InvalidOrigin",
    )
    assert routing.message.startswith("spec.origin: ") and words in routing.message
    assert result.events and result.events[0].severity == "Warning"


def test_an_ipv6_spelling_the_backend_crd_refuses_is_invalid() -> None:
    # ``::2`` is a valid IPv6 address the Backend CRD's ip.address pattern refuses.
    result = reconcile_endpoint(endpoint("http://[::2]:8000"))
    assert result.objects == [] and "ip.address pattern" in result.conditions[0].message


@pytest.mark.parametrize("origin", ["https://api.example.com/v1", "http://10.0.0.1/x?y=1"])
def test_an_origin_with_a_path_is_refused_naming_the_prefix(origin: str) -> None:
    result = reconcile_endpoint(endpoint(origin))
    assert result.objects == []
    assert "spec.api.prefix" in result.conditions[0].message


def test_backend_name_is_published_once_the_origin_is_valid() -> None:
    result = reconcile_endpoint(endpoint("https://api.openai.com"))
    assert result.status.routing is not None
    assert result.status.routing.backend_name == backend_service_name("openai-overflow")
    assert result.ready


@given(st.integers(min_value=1, max_value=65535), st.sampled_from(["http", "https"]))
def test_explicit_port_wins(port: int, scheme: str) -> None:
    assert parse_target(f"{scheme}://model.example.com:{port}/v1").port == port


@given(st.text(max_size=40))
def test_any_text_is_a_target_or_invalid(url: str) -> None:
    try:
        target = parse_target(url)
    except InvalidURL:
        return
    assert target.scheme in {"http", "https"} and 1 <= target.port <= 65535
    checked: Any = target.address_type
    assert checked in {"IPv4", "IPv6", "FQDN"}


# The refused ranges as networks, written apart from the code's predicates: Go's
# IsUnspecified, IsLoopback, IsLinkLocalUnicast and IsLinkLocalMulticast (ff02::/16 and its
# 15 siblings ff12::/16 ... fff2::/16: any flags, link-local scope), and IPv4-mapped IPv6.
REFUSED_NETWORKS = [
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/32",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "224.0.0.0/24",
        "::/128",
        "::1/128",
        "fe80::/10",
        "::ffff:0:0/96",
        *(f"ff{flags:x}2::/16" for flags in range(16)),
    )
]


def _url(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    return f"http://{address}/v1" if address.version == 4 else f"http://[{address}]/v1"


def _refused_by_api(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return any(address in network for network in REFUSED_NETWORKS)


def _in_and_near_refused(version: int) -> st.SearchStrategy[Any]:
    """Addresses of one family, drawn often from inside or next to the refused networks."""
    networks = [n for n in REFUSED_NETWORKS if n.version == version]
    edges = [a for n in networks for a in (int(n[0]) - 1, int(n[0]), int(n[-1]), int(n[-1]) + 1)]
    top = 2**32 - 1 if version == 4 else 2**128 - 1
    numbers = st.one_of(
        st.integers(0, top),
        st.sampled_from([e for e in edges if 0 <= e <= top]),
        st.sampled_from(networks).flatmap(lambda n: st.integers(int(n[0]), int(n[-1]))),
    )
    return numbers.map(ipaddress.IPv4Address if version == 4 else ipaddress.IPv6Address)


@given(st.one_of(_in_and_near_refused(4), _in_and_near_refused(6)))
def test_an_ip_url_is_invalid_exactly_when_the_api_server_refuses_its_slice(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    try:
        target = parse_target(_url(address))
    except InvalidURL as invalid:
        assert _refused_by_api(address), str(invalid)
        assert "EndpointSlice may not" in str(invalid)
        return
    assert not _refused_by_api(address)
    assert target.address_type == ("IPv4" if address.version == 4 else "IPv6")
