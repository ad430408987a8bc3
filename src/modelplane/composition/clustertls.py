"""How the front door reaches a replica over its inference cluster's HTTPS gateway.

Pure. A cluster declaring ``spec.gateway.tls`` serves HTTPS on 443 with the operator's
certificate (stack/components.py), and its replicas' ModelEndpoints have the origin
``https://<hostname>`` (composition/endpoint.py). The hostname is the certificate's name, not
necessarily one DNS resolves, so the front door's Backend for such an endpoint connects to the
address the cluster publishes (``status.gateway.address``: an ``ip`` or ``fqdn`` endpoint) and
sends the hostname as SNI. Envoy Gateway v1.8.3 turns a Backend's ``tls.sni`` into the upstream
SNI and, with no ``subjectAltNames``, into the one DNS SAN the certificate must carry, whatever
the endpoint type (envoyproxy/gateway ``internal/xds/translator/translator.go``
``buildValidationContext``, ``buildXdsUpstreamTLSSocketWthCert`` @ v1.8.3). The trust is the
system's CAs, or the cluster's ``caCertificate`` in a ConfigMap under ``ca.crt`` in the
Backend's namespace (``api/v1alpha1/backend_types.go`` ``BackendTLSSettings.caCertificateRefs``:
local references to a ConfigMap or Secret with the key ``ca.crt``;
``internal/gatewayapi/backendtlspolicy.go`` ``getCaCertsFromCARefs``; Envoy Gateway's provider
watches the ConfigMap, ``internal/provider/kubernetes/controller.go`` @ v1.8.3).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace

from modelplane.api import InferenceCluster, ModelEndpoint
from modelplane.composition.backend import SYSTEM_CAS, BackendTarget, InvalidURL, parse_origin
from modelplane.composition.types import Json
from modelplane.naming import CLUSTER_LABEL

# The key Envoy Gateway reads a CA bundle from (internal/gatewayapi/helpers.go CACertKey @ v1.8.3).
CA_KEY = "ca.crt"


@dataclass(frozen=True, slots=True)
class GatewayTLSBackend:
    """Where the front door connects for an endpoint on an HTTPS cluster gateway, and how.

    ``target``: the cluster's published address (the hostname while none is published) at the
    origin's port; ``sni``: the certificate's name; ``ca``: the PEM bundle to trust (None: the
    system's CAs); ``cluster``: the endpoint's InferenceCluster.
    """

    target: BackendTarget
    sni: str
    ca: str | None
    cluster: str


def gateway_tls_backend(
    endpoint: ModelEndpoint, target: BackendTarget, clusters: Mapping[str, InferenceCluster]
) -> GatewayTLSBackend | None:
    """The HTTPS cluster gateway ``endpoint`` is reached through, or None (reached at its origin).

    Only an endpoint whose cluster label names a cluster declaring ``spec.gateway.tls`` and whose
    https origin's host is that cluster's ``hostname``: the endpoint a replica there gets, or one
    written by hand for the same gateway. Anything else (a hosted provider) is reached at its
    origin as before.
    """
    name = (endpoint.metadata.labels or {}).get(CLUSTER_LABEL)
    cluster = clusters.get(name) if name else None
    gateway = cluster.spec.gateway if cluster is not None else None
    tls = gateway.tls if gateway is not None else None
    if cluster is None or tls is None or target.scheme != "https" or target.host != tls.hostname:
        return None
    status = cluster.status.gateway if cluster.status is not None else None
    address = status.address if status is not None else None
    return GatewayTLSBackend(
        _at(address, target) if address else target, tls.hostname, tls.ca_certificate, name or ""
    )


def _at(address: str, target: BackendTarget) -> BackendTarget:
    """``target`` moved to the published ``address`` (its port kept); ``target`` itself when the
    address is none a Backend can hold."""
    host = f"[{address}]" if ":" in address else address
    try:
        seen = parse_origin(f"http://{host}")
    except InvalidURL:
        return target
    return replace(target, host=seen.host, address_type=seen.address_type)


def ca_digest(ca: str) -> str:
    """A short digest of a CA bundle: its ConfigMap is named by content, so the clusters sharing
    a CA share one."""
    return hashlib.sha256(ca.encode()).hexdigest()[:10]


def backend_tls(tls: GatewayTLSBackend, config_map: str | None) -> Json:
    """The Backend's ``tls``: SNI the certificate's name, trust the ConfigMap or the system."""
    if config_map is None:
        return {"sni": tls.sni, "wellKnownCACertificates": SYSTEM_CAS}
    return {
        "sni": tls.sni,
        "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": config_map}],
    }


def ca_config_map(namespace: str, name: str, ca: str, labels: Mapping[str, str]) -> Json:
    """The ConfigMap Envoy Gateway reads a Backend's trusted CAs from (key ``ca.crt``)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "data": {CA_KEY: ca},
    }
