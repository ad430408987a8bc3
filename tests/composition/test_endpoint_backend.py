"""A ModelEndpoint is routable: its Service and EndpointSlice, or InvalidURL.

The EndpointSlice fields follow kubernetes/api discovery/v1 (types.go at v0.34.0):
addressType IPv4, IPv6 or FQDN, ports by name matching the Service's port, and the
``kubernetes.io/service-name`` label that ties a slice to its Service.
"""

from __future__ import annotations

import copy
import ipaddress
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import ModelEndpoint
from modelplane.composition.backend import InvalidURL, parse_target
from modelplane.naming import SERVICE_NAME_LABEL, backend_service_name
from modelplane.reconcile.endpoint import converged, reconcile_endpoint

from .schemas import validate_manifest

OBSERVED = ("backend-service", "backend-endpointslice", "backend-tls-policy")


def endpoint(url: str, name: str = "openai-overflow", namespace: str = "ml-team") -> ModelEndpoint:
    """A hand-written ModelEndpoint."""
    return ModelEndpoint.model_validate(
        {"metadata": {"name": name, "namespace": namespace}, "spec": {"url": url}}
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
    ("http://[::2]/v1", "::2", 80, "IPv6"),
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


@pytest.mark.parametrize(("url", "host", "port", "address_type"), VALID)
def test_service_and_slice_point_at_the_url(
    url: str, host: str, port: int, address_type: str
) -> None:
    result = reconcile_endpoint(endpoint(url), OBSERVED)
    service, endpoint_slice = (o.object for o in result.objects[:2])
    name = backend_service_name("openai-overflow")
    assert service["kind"] == "Service" and service["metadata"]["name"] == name
    assert "selector" not in service["spec"]  # selectorless: the slice is its only source
    # Traefik must dial the slice's addresses (FQDN ones too), never the ClusterIP, which
    # kube-proxy does not route to an FQDN slice (traefik gateway/kubernetes.go @ v3.7.9).
    assert service["metadata"]["annotations"] == {"traefik.io/service.nativelb": "false"}
    # Not ExternalName: Traefik refuses that type as a backendRef (same file, same tag).
    assert service["spec"].get("type", "ClusterIP") == "ClusterIP"
    assert [p["port"] for p in service["spec"]["ports"]] == [port]
    assert endpoint_slice["addressType"] == address_type
    assert endpoint_slice["endpoints"] == [{"addresses": [host], "conditions": {"ready": True}}]
    assert endpoint_slice["metadata"]["labels"][SERVICE_NAME_LABEL] == name
    # The slice's port joins the Service's port by name.
    assert endpoint_slice["ports"][0]["name"] == service["spec"]["ports"][0]["name"]
    assert endpoint_slice["ports"][0]["port"] == port
    assert result.status.routing is not None and result.status.routing.backend_name == name
    assert [(c.type, c.status, c.reason) for c in result.conditions] == [
        ("RoutingReady", "True", "BackendReady")
    ]


@pytest.mark.parametrize(("url", "host", "port", "address_type"), VALID)
def test_backend_objects_are_valid_kubernetes(
    url: str, host: str, port: int, address_type: str
) -> None:
    for composed in reconcile_endpoint(endpoint(url), OBSERVED).objects:
        if composed.object["kind"] == "BackendTLSPolicy":
            check_backend_tls_policy(composed.object)
        else:
            validate_manifest(composed.object)


# The BackendTLSPolicy CRD is not in ../shared/schemas, so this is a strict hand schema of
# the fields we set, from kubernetes-sigs/gateway-api apis/v1/backendtlspolicy_types.go
# (v1 and standard channel since v1.4.0; read at v1.6.1): targetRefs 1..16 of
# LocalPolicyTargetReferenceWithSectionName {group, kind, name}; validation requires
# hostname (a PreciseHostname: a DNS name, no IP, no wildcard) and exactly one of
# caCertificateRefs / wellKnownCACertificates, whose only value is "System".
_PRECISE_HOSTNAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def check_backend_tls_policy(policy: dict[str, Any]) -> None:
    """Fail unless ``policy`` is a BackendTLSPolicy the v1 CRD accepts (the fields we use)."""
    assert set(policy) == {"apiVersion", "kind", "metadata", "spec"}
    assert (policy["apiVersion"], policy["kind"]) == (
        "gateway.networking.k8s.io/v1",
        "BackendTLSPolicy",
    )
    assert set(policy["spec"]) <= {"targetRefs", "validation", "options"}
    refs = policy["spec"]["targetRefs"]
    assert 1 <= len(refs) <= 16
    for ref in refs:
        assert set(ref) <= {"group", "kind", "name", "sectionName"}
        assert {"group", "kind", "name"} <= set(ref)
        assert 1 <= len(ref["name"]) <= 253 and len(ref["kind"]) <= 63
    validation = policy["spec"]["validation"]
    allowed = {"caCertificateRefs", "wellKnownCACertificates", "hostname", "subjectAltNames"}
    assert set(validation) <= allowed
    hostname = validation["hostname"]
    assert len(hostname) <= 253 and _PRECISE_HOSTNAME.match(hostname), hostname
    assert not _is_ip(hostname)
    assert ("caCertificateRefs" in validation) != ("wellKnownCACertificates" in validation)
    assert validation.get("wellKnownCACertificates", "System") == "System"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(("url", "host", "port", "address_type"), VALID)
def test_https_gets_a_backend_tls_policy_and_http_none(
    url: str, host: str, port: int, address_type: str
) -> None:
    result = reconcile_endpoint(endpoint(url), OBSERVED)
    policies = [o.object for o in result.objects if o.object["kind"] == "BackendTLSPolicy"]
    if not url.lower().startswith("https"):
        assert policies == []
        return
    [policy] = policies
    check_backend_tls_policy(policy)
    name = backend_service_name("openai-overflow")
    service = result.objects[0].object
    # It targets the endpoint's own Service, in its namespace, and verifies the URL's host.
    assert policy["metadata"]["namespace"] == service["metadata"]["namespace"] == "ml-team"
    assert policy["spec"]["targetRefs"] == [{"group": "", "kind": "Service", "name": name}]
    assert policy["spec"]["validation"] == {"hostname": host, "wellKnownCACertificates": "System"}
    # Traefik picks https for a Service port named "https" or numbered 443
    # (traefik pkg/provider/kubernetes/gateway/httproute.go getProtocol).
    assert service["spec"]["ports"][0]["name"] == "https"


def test_hand_schema_refuses_what_the_crd_refuses() -> None:
    good = reconcile_endpoint(endpoint("https://api.openai.com/v1"), OBSERVED).objects[2].object
    check_backend_tls_policy(good)
    broken = [
        ("hostname", "203.0.113.7"),
        ("hostname", "*.openai.com"),
        ("wellKnownCACertificates", "Mozilla"),
        ("caCertificateRefs", [{"group": "", "kind": "ConfigMap", "name": "ca"}]),
    ]
    for field, value in broken:
        bad = copy.deepcopy(good)
        bad["spec"]["validation"][field] = value
        with pytest.raises(AssertionError):
            check_backend_tls_policy(bad)


def test_https_backend_waits_for_its_tls_policy() -> None:
    result = reconcile_endpoint(endpoint("https://api.openai.com/v1"), OBSERVED[:2])
    assert not result.ready
    assert result.status.routing is not None and result.status.routing.backend_name is None
    plain = reconcile_endpoint(endpoint("http://inference.example.com/v1"), OBSERVED[:2])
    assert plain.ready


@pytest.mark.parametrize(("url", "words"), INVALID + API_REFUSED)
def test_invalid_url_composes_nothing_and_warns(url: str, words: str) -> None:
    result = reconcile_endpoint(endpoint(url), OBSERVED)
    assert result.objects == []
    [routing] = result.conditions
    assert (routing.type, routing.status, routing.reason) == ("RoutingReady", "False", "InvalidURL")
    assert routing.message is not None and words in routing.message
    assert routing.message.startswith("spec.url: ")
    assert [e.severity for e in result.events] == ["Warning"]
    assert "ml-team/openai-overflow" in result.events[0].message
    assert result.status.routing is not None and result.status.routing.backend_name is None


def test_backend_name_is_published_only_once_observed() -> None:
    first = reconcile_endpoint(endpoint("https://api.openai.com/v1"), ())
    assert first.status.routing is not None and first.status.routing.backend_name is None
    assert [(c.status, c.reason) for c in first.conditions] == [("False", "Configuring")]
    assert not first.ready
    half = reconcile_endpoint(endpoint("https://api.openai.com/v1"), OBSERVED[:1])
    assert half.status.routing is not None and half.status.routing.backend_name is None
    later = reconcile_endpoint(endpoint("https://api.openai.com/v1"), converged(first))
    assert later.ready and later.objects == first.objects


def test_rewrite_path_is_kept_on_the_endpoint() -> None:
    given_endpoint = ModelEndpoint.model_validate(
        {
            "metadata": {"name": "r", "namespace": "ml-team"},
            "spec": {"url": "http://203.0.113.7/ml-team/r/v1", "rewritePath": "/ml-team/r/"},
        }
    )
    assert given_endpoint.to_wire()["spec"]["rewritePath"] == "/ml-team/r/"


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
