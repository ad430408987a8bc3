"""The InferenceGateway's default implementation supports per-backend rewrites.

Data: kubernetes-sigs/gateway-api @ v1.6.1, conformance/reports/v1.5/*/ (the report named
per row), the features HTTPRouteBackendRequestHeaderModification (filters on a
backendRef), HTTPRoutePathRewrite and HTTPRouteHostRewrite in supportedFeatures.
"""

from __future__ import annotations

from modelplane.api import InferenceGateway

NEEDED = {"backend-filters", "path-rewrite", "host-rewrite"}
# implementation -> (GatewayClass it documents, the features its report lists as supported)
REPORTS = {
    "traefik v3.7": ("traefik", NEEDED),
    "envoy-gateway v1.8.0": ("eg", NEEDED),
    "kgateway v2.3.0-beta.3": ("kgateway", NEEDED),
    "nginx-gateway-fabric 2.6.0": ("nginx", {"path-rewrite", "host-rewrite"}),
    "gke-gateway 1.35.2": ("gke-l7-global-external-managed", {"host-rewrite"}),
}


def test_the_default_gateway_class_supports_every_rewrite_a_route_uses() -> None:
    default = InferenceGateway.model_validate({"metadata": {"name": "default"}})
    supporting = {cls for cls, features in REPORTS.values() if features >= NEEDED}
    assert default.spec.gateway_class_name in supporting
    assert default.spec.port == 80
