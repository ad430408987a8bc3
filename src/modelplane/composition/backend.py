"""The routable backend of a ModelEndpoint, for Envoy Gateway with Envoy AI Gateway.

Every ModelEndpoint (composed for a replica or written by hand for a hosted provider) is
reached through an Envoy Gateway ``Backend`` at its origin, an Envoy AI Gateway
``AIServiceBackend`` naming its API schema and prefix, and with a credential a
``BackendSecurityPolicy`` naming the user's Secret, which each ModelService routing to it
composes on its gateways' clusters (docs/composition.md, "Routable endpoints").
Pure: the origin is parsed here, nothing is resolved.
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
from modelplane.naming import CALLER_HEADER, ENDPOINT_LABEL, backend_service_name

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
        # The Backend's tls.sni is the name the certificate is verified against; an IP
        # literal gives the gateway no name to verify.
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


def parse_origin(origin: str) -> BackendTarget:
    """The target of an origin (``scheme://host[:port]``, no path); raises InvalidURL."""
    target = parse_target(origin)  # the scheme, host and port checks first
    parts = urlsplit(origin)
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise InvalidURL(
            f"{origin!r}: an origin has no path, query or fragment; put the path in spec.api.prefix"
        )
    if target.address_type != "FQDN" and not _EG_IP.match(target.host):
        raise InvalidURL(
            f"{origin!r}: Envoy Gateway's Backend does not accept the address {target.host} "
            "(its ip.address pattern); write the address in full"
        )
    return target


# The Backend CRD's spec.endpoints[].ip.address pattern (envoyproxy/gateway
# api/v1alpha1/backend_types.go @ v1.8.3): narrower than IPv6's grammar (``::2`` fails it).
_EG_IP = re.compile(
    r"^((25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)$"
    r"|^(([0-9a-fA-F]{1,4}:){1,7}[0-9a-fA-F]{1,4}|::|(([0-9a-fA-F]{1,4}:){0,5})?"
    r"(:[0-9a-fA-F]{1,4}){1,2})$"
)


# Envoy Gateway's Backend (gateway.envoyproxy.io/v1alpha1; envoyproxy/gateway
# api/v1alpha1/backend_types.go @ v1.8.3): one endpoint, fqdn or ip, and for https a
# client TLS setting whose sni is the host and whose trust is the system CAs. The stack's
# Envoy Gateway enables the Backend API (config.envoyGateway.extensionApis.enableBackend).
EG_API = "gateway.envoyproxy.io/v1alpha1"
AI_GATEWAY_API = "aigateway.envoyproxy.io/v1beta1"
# The only wellKnownCACertificates value Envoy Gateway (like Gateway API) defines.
SYSTEM_CAS = "System"


def eg_backend(
    namespace: str,
    endpoint: str,
    target: BackendTarget,
    name: str | None = None,
    tls: Json | None = None,
) -> Json:
    """The Backend at ``target``: an fqdn or ip endpoint, TLS verified for https.

    ``name``: the Backend's name (default: the endpoint's ``backend_service_name``);
    ``tls``: its TLS settings where they are not the host's name against the system's CAs
    (an inference cluster's HTTPS gateway, composition/clustertls.py)."""
    name = name or backend_service_name(endpoint)
    host = target.host.rstrip(".")
    address: Json = (
        {"fqdn": {"hostname": host, "port": target.port}}
        if target.address_type == "FQDN"
        else {"ip": {"address": host, "port": target.port}}
    )
    spec: Json = {"endpoints": [address]}
    if tls is not None:
        spec["tls"] = tls
    elif target.scheme == "https":
        # parse_target refuses https to an IP literal, so the SNI is a host name.
        spec["tls"] = {"sni": host, "wellKnownCACertificates": SYSTEM_CAS}
    return {
        "apiVersion": EG_API,
        "kind": "Backend",
        "metadata": {"name": name, "namespace": namespace, "labels": {ENDPOINT_LABEL: endpoint}},
        "spec": spec,
    }


def ai_service_backend(
    namespace: str, endpoint: str, schema: str, prefix: str, name: str | None = None
) -> Json:
    """The AIServiceBackend: the API schema and prefix of the Backend of the same name.

    Envoy AI Gateway v1.1.0 accepts only an Envoy Gateway Backend as backendRef (the CRD's
    rule, envoyproxy/ai-gateway api/v1beta1/ai_service_backend.go); ``schema.prefix`` is the
    path the backend serves the API under (api/v1beta1/shared_types.go VersionedAPISchema).
    ``name`` names it and the Backend it points at (default: ``backend_service_name``).

    ``headerMutation.remove`` drops the caller's id before every try goes to this backend
    (api/v1beta1/ai_service_backend.go; the upstream extproc's internal/headermutator Mutate
    removes it on each try and restores no removed header on a retry, @ v1.1.0). The usage
    record reads the copy taken before the router (stack/components.py CALLER_LOG_ATTRIBUTES).
    """
    name = name or backend_service_name(endpoint)
    return {
        "apiVersion": AI_GATEWAY_API,
        "kind": "AIServiceBackend",
        "metadata": {"name": name, "namespace": namespace, "labels": {ENDPOINT_LABEL: endpoint}},
        "spec": {
            "schema": {"name": schema, "prefix": prefix},
            "backendRef": {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": name},
            "headerMutation": {"remove": [CALLER_HEADER]},
        },
    }


def backend_security_policy(
    namespace: str, endpoint: str, schema: str, secret: str, name: str | None = None
) -> Json:
    """The BackendSecurityPolicy attaching the key in ``secret`` to the AIServiceBackend.

    The key is never read or copied: the policy names the Secret, whose data key must be
    ``apiKey`` (envoyproxy/ai-gateway api/v1beta1/backendsecurity_policy.go @ v1.1.0). An
    OpenAI backend gets it as ``Authorization: Bearer`` (type APIKey), an Anthropic one as
    ``x-api-key`` (type AnthropicAPIKey). ``name`` names it and the AIServiceBackend it
    targets (default: ``backend_service_name``).
    """
    name = name or backend_service_name(endpoint)
    ref = {"secretRef": {"name": secret, "namespace": namespace}}
    typed: Json = (
        {"type": "AnthropicAPIKey", "anthropicAPIKey": ref}
        if schema == "Anthropic"
        else {"type": "APIKey", "apiKey": ref}
    )
    return {
        "apiVersion": AI_GATEWAY_API,
        "kind": "BackendSecurityPolicy",
        "metadata": {"name": name, "namespace": namespace, "labels": {ENDPOINT_LABEL: endpoint}},
        "spec": {
            "targetRefs": [
                {"group": "aigateway.envoyproxy.io", "kind": "AIServiceBackend", "name": name}
            ],
            **typed,
        },
    }
