"""The routable backend of a ModelEndpoint: a selectorless Service and its EndpointSlice.

A Gateway routes to a Service, so each ModelEndpoint (composed for a replica or written
by hand for a hosted provider) gets one on the control plane whose EndpointSlice points
at the URL's host and port (docs/composition.md, routable endpoints).
Pure: the URL is parsed here, nothing is resolved.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from modelplane.composition.types import Json
from modelplane.errors import ModelplaneError
from modelplane.naming import (
    ENDPOINT_LABEL,
    SERVICE_NAME_LABEL,
    SLICE_MANAGED_BY_LABEL,
    SLICE_MANAGER,
    backend_service_name,
)

AddressType = Literal["IPv4", "IPv6", "FQDN"]

# RFC 1123 host names, as EndpointSlice validates FQDN addresses (a dot-separated name of
# lowercase labels, at most 253 characters; kubernetes pkg/apis/discovery/validation).
_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_FQDN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_DEFAULT_PORTS = {"https": 443, "http": 80}

# The address classes the API server refuses in an IPv4 or IPv6 EndpointSlice (kubernetes
# pkg/apis/core/validation ValidateEndpointIP, called by pkg/apis/discovery/validation for
# both address types; the ranges are Go's net.IP classes, which read an IPv4-mapped IPv6
# address as IPv4). Each: (test, the rule's words).
_IPv4 = ipaddress.IPv4Address
_IPv6 = ipaddress.IPv6Address
_LINK_LOCAL_MULTICAST_V4 = ipaddress.IPv4Network("224.0.0.0/24")


def _link_local_multicast(ip: _IPv4 | _IPv6) -> bool:
    """Go's IsLinkLocalMulticast: 224.0.0.0/24, or IPv6 multicast (ff) of link-local scope (2)
    whatever its flags (ff02::, ff12::, ...)."""
    if isinstance(ip, _IPv4):
        return ip in _LINK_LOCAL_MULTICAST_V4
    return ip.packed[0] == 0xFF and ip.packed[1] & 0x0F == 0x02


_REFUSED_CLASSES: tuple[tuple[Callable[[_IPv4 | _IPv6], bool], str], ...] = (
    (lambda ip: ip.is_unspecified, "unspecified (0.0.0.0, ::)"),
    (lambda ip: ip.is_loopback, "in the loopback range (127.0.0.0/8, ::1)"),
    (lambda ip: ip.is_link_local, "in the link-local range (169.254.0.0/16, fe80::/10)"),
    (
        _link_local_multicast,
        "in the link-local multicast range (224.0.0.0/24; IPv6 multicast of link-local scope, "
        "such as ff02::/16)",
    ),
)

# Traefik's Gateway provider dials the EndpointSlice addresses of a backend Service as they
# are, FQDN ones included, unless native load-balancing sends it to the Service's ClusterIP
# (which kube-proxy never routes to an FQDN slice). Pin it off on our Services, whatever the
# provider's nativeLBByDefault (traefik/traefik pkg/provider/kubernetes/gateway/
# kubernetes.go getBackendAddresses, annotations.go @ v3.7.9). Traefik refuses ExternalName
# Services as backendRefs there, so an FQDN slice, not ExternalName, is the portable shape.
TRAEFIK_NATIVE_LB_ANNOTATION = "traefik.io/service.nativelb"


@dataclass(frozen=True, slots=True)
class BackendTarget:
    """Where a URL points: scheme, host, port and the EndpointSlice address type."""

    scheme: Literal["http", "https"]
    host: str
    port: int
    address_type: AddressType


class InvalidURL(ModelplaneError, ValueError):
    """A ModelEndpoint URL a Gateway cannot route to; the message says why."""


def parse_target(url: str) -> BackendTarget:
    """The target of ``url``; raises InvalidURL naming the first problem."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:  # a bad port or a malformed IPv6 literal
        raise InvalidURL(f"{url!r} is not a valid URL: {error}") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise InvalidURL(f"{url!r}: the scheme must be http or https, not {parts.scheme!r}")
    if parts.username is not None or parts.password is not None:
        raise InvalidURL(f"{url!r}: credentials in the URL are not routable; use a Secret")
    host = (parts.hostname or "").lower()
    if not host:
        raise InvalidURL(f"{url!r}: the URL has no host")
    if port == 0:
        raise InvalidURL(f"{url!r}: port 0 is not a valid port")
    address_type = _address_type(url, host)
    if scheme == "https" and address_type != "FQDN":
        # BackendTLSPolicy validation.hostname is a PreciseHostname, never an IP address,
        # so a Gateway cannot verify TLS to an IP literal (gateway-api apis/v1 @ v1.6.1).
        raise InvalidURL(f"{url!r}: https needs a host name the gateway can verify, not an IP")
    return BackendTarget(
        "https" if scheme == "https" else "http",
        host,
        port if port is not None else _DEFAULT_PORTS[scheme],
        address_type,
    )


def _address_type(url: str, host: str) -> AddressType:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if len(host) > 253 or not _FQDN.match(host.rstrip(".")):
            raise InvalidURL(f"{url!r}: {host!r} is not a valid host name") from None
        return "FQDN"
    problem = endpoint_ip_problem(address)
    if problem is not None:
        raise InvalidURL(f"{url!r}: {host} {problem}")
    return "IPv4" if address.version == 4 else "IPv6"


def endpoint_ip_problem(address: _IPv4 | _IPv6) -> str | None:
    """Why the API server refuses ``address`` in an EndpointSlice ("is ..."), or None.

    An IPv4-mapped IPv6 address (``::ffff:a.b.c.d``) is no IPv6 slice address: discovery
    validation asks an IPv6 address to have no IPv4 form (Go's ``To4() == nil``). A zone
    (``%eth0``) is no IP at all to Go's parser. Otherwise the classes of
    ``ValidateEndpointIP``: unspecified, loopback, link-local, link-local multicast.
    Private ranges (10/8, 172.16/12, 192.168/16, fc00::/7) are accepted.
    """
    if isinstance(address, _IPv6) and address.ipv4_mapped is not None:
        return (
            "is an IPv4-mapped IPv6 address, which an IPv6 EndpointSlice may not hold; "
            f"write {address.ipv4_mapped}"
        )
    if isinstance(address, _IPv6) and address.scope_id is not None:
        return "is an IPv6 address with a zone, which an EndpointSlice may not hold"
    for refused, rule in _REFUSED_CLASSES:
        if refused(address):
            return f"is {rule}, which an EndpointSlice may not point at"
    return None


def backend_objects(namespace: str, endpoint: str, target: BackendTarget) -> tuple[Json, Json]:
    """The selectorless Service and the EndpointSlice that routes it to ``target``."""
    name = backend_service_name(endpoint)
    labels = {ENDPOINT_LABEL: endpoint}
    port = {"name": target.scheme, "port": target.port, "protocol": "TCP"}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {TRAEFIK_NATIVE_LB_ANNOTATION: "false"},
        },
        # No selector: the EndpointSlice below is the Service's only source of endpoints.
        "spec": {"ports": [{**port, "targetPort": target.port}]},
    }
    address = target.host.rstrip(".")
    endpoint_slice = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                **labels,
                SERVICE_NAME_LABEL: name,
                SLICE_MANAGED_BY_LABEL: SLICE_MANAGER,
            },
        },
        "addressType": target.address_type,
        "ports": [port],
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
    }
    return service, endpoint_slice


# BackendTLSPolicy is in Gateway API's standard channel as gateway.networking.k8s.io/v1
# (kubernetes-sigs/gateway-api apis/v1/backendtlspolicy_types.go, read at v1.6.1). Traefik
# v3.7 reports the feature supported (conformance/reports/v1.5/traefik-traefik/
# experimental-v3.7.0-default-report.yaml) and, when a policy targets the backend Service,
# dials https with the policy's hostname as SNI and the system CAs for wellKnown "System"
# (traefik pkg/provider/kubernetes/gateway/httproute.go loadHTTPServers @ v3.7.9). So the
# Service port needs no appProtocol; docs/crossplane.md, "TLS to hosted backends".
BACKEND_TLS_POLICY_API = "gateway.networking.k8s.io/v1"
# The only wellKnownCACertificates value the API defines: the gateway's system trust store.
SYSTEM_CAS = "System"


def backend_tls_policy(namespace: str, endpoint: str, target: BackendTarget) -> Json | None:
    """The BackendTLSPolicy for an https target (None for http).

    Without it a Gateway speaks plain HTTP to the Service even on port 443. The policy
    targets the backend Service; the URL's host is the SNI and the name the certificate
    must carry, checked against the gateway's system CAs (a hosted provider's public
    certificate). parse_target refuses https to an IP literal, so the host is a name.
    """
    if target.scheme != "https":
        return None
    name = backend_service_name(endpoint)
    return {
        "apiVersion": BACKEND_TLS_POLICY_API,
        "kind": "BackendTLSPolicy",
        "metadata": {"name": name, "namespace": namespace, "labels": {ENDPOINT_LABEL: endpoint}},
        "spec": {
            "targetRefs": [{"group": "", "kind": "Service", "name": name}],
            "validation": {
                "hostname": target.host.rstrip("."),
                "wellKnownCACertificates": SYSTEM_CAS,
            },
        },
    }
