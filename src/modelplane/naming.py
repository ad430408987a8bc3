"""The one home of every name this project writes or reads back (Decision 6).

Label keys, annotation keys, Crossplane resource-key formats, well-known object
names and the name formulas of composed objects: ``render``, the Crossplane
functions and the tests all import them from here, so two runtimes cannot drift.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Final

from modelplane.memo import memoized

_NOT_DNS = re.compile(r"[^a-z0-9-]")

# The prefix of every label and annotation this project manages; nothing else may use it.
MANAGED_PREFIX: Final = "modelplane.ai/"

# Labels of a ModelReplica and ModelEndpoint (docs/api.md, "Kinds, identity and managed labels"):
# who owns it, and its identity.
DEPLOYMENT_LABEL: Final = "modelplane.ai/deployment"
DEPLOYMENT_NAMESPACE_LABEL: Final = "modelplane.ai/deployment-namespace"
CLUSTER_LABEL: Final = "modelplane.ai/cluster"
INDEX_LABEL: Final = "modelplane.ai/replica-index"
# The template revision a ModelReplica runs, like a Deployment's pod-template-hash.
TEMPLATE_HASH_LABEL: Final = "modelplane.ai/template-hash"
# When a replica started waiting to become Ready at its revision (RFC 3339, UTC):
# written when it is created or updated and a clock is given, dropped once it is Ready.
REVISION_SINCE_ANNOTATION: Final = "modelplane.ai/revision-since"
# When a ModelEndpoint was withdrawn (RFC 3339, UTC; empty without a clock): routes drop it
# while its backend Service stays, so no request is routed to a backend being deleted
# (docs/reconcile.md, "Drain before delete").
DRAINING_SINCE_ANNOTATION: Final = "modelplane.ai/draining-since"

# Labels of composed pods and their selectors (docs/composition.md, "Objects, in order").
REPLICA_LABEL: Final = "modelplane.ai/replica"
ENGINE_LABEL: Final = "modelplane.ai/engine"
ROLE_LABEL: Final = "modelplane.ai/role"
PHASE_LABEL: Final = "modelplane.ai/phase"
SERVING_LABEL: Final = "modelplane.ai/serving"
WORKLOAD_LABEL: Final = "modelplane.ai/workload"
POOL_LABEL: Final = "modelplane.ai/pool"  # on the GPU nodes of a pool

# Labels of a ModelCache's composed objects (docs/composition.md, "Examples").
CACHE_LABEL: Final = "modelplane.ai/cache"
CACHE_NAMESPACE_LABEL: Final = "modelplane.ai/cache-namespace"

# The endpoint picker's config checksum, rolling its pods on a config change.
EPP_CONFIG_CHECKSUM_ANNOTATION: Final = "modelplane.ai/epp-config-checksum"

# Well-known objects on every workload cluster.
SYSTEM_NAMESPACE: Final = "modelplane-system"
# On a ModelReplica: the namespace its remote objects are in on its cluster (absent: the
# shared ``default`` of an earlier release). On a remote Namespace we create: the team's.
REMOTE_NAMESPACE_LABEL: Final = "modelplane.ai/remote-namespace"
TEAM_NAMESPACE_LABEL: Final = "modelplane.ai/team-namespace"
GATEWAY_NAME: Final = "inference-gateway"
PROVIDER_CONFIG_KIND: Final = "ClusterProviderConfig"

# Crossplane resource keys of the deployment function's desired state.
REPLICA_KEY_PREFIX: Final = "replica-"
ENDPOINT_KEY_PREFIX: Final = "endpoint-"
# A Crossplane Usage that keeps an InferenceCluster from being deleted while a replica (in
# the deployment function) or a cache's staging (in the cache function) is on it
# (docs/reconcile.md, "Deletion protection").
USAGE_KEY_PREFIX: Final = "usage-"

# Crossplane resource keys of the InferenceCluster function's desired state.
PROVIDER_CONFIG_KEY: Final = "cluster-provider-config"
GATEWAY_KEY: Final = "inference-gateway"
GATEWAY_CLASS_KEY: Final = "inference-gateway-class"


def _hash5(full: str) -> str:
    return hashlib.sha256(full.encode("utf-8")).hexdigest()[:5]


def child_name(*parts: str, max_length: int = 63) -> str:
    """Crossplane's child_name rule: parts joined by '-', cut, then a 5-hex-digit hash.

    No lowercasing or character mapping (docs/api.md, "ModelCache fields"): the PVC of a ModelCache
    and the
    provider config of a cluster are named by this rule by whoever creates them.
    """
    full = "-".join(parts)
    prefix = full[: max_length - 6].rstrip("-")
    return f"{prefix}-{_hash5(full)}"


def dns_name(*parts: str, max_length: int = 63) -> str:
    """A DNS-1035 label of at most ``max_length`` characters for a composed object
    (docs/composition.md, "Names").
    """
    full = "-".join(parts)
    visible = _NOT_DNS.sub("-", full.lower())
    if not visible[:1].isalpha():
        visible = "mp-" + visible
    prefix = visible[: max_length - 6].rstrip("-")
    return f"{prefix}-{_hash5(full)}"


def replica_name(deployment: str, cluster: str, index: int) -> str:
    """The ModelReplica (and ModelEndpoint) name of replica (cluster, index) (docs/scheduling.md,
    "Inputs, identity and result").
    """
    full = f"{deployment}-{cluster}-{index}"
    return f"{deployment[:57].rstrip('-')}-{_hash5(full)}"


@memoized("naming.provider_config_names", 4096)
def provider_config_name(cluster_name: str) -> str:
    """``CPC``: the ClusterProviderConfig of a cluster.

    The InferenceCluster function creates it under this name and a local ``render``
    assumes it, so both go through here. Remembered: every Object and Release of a
    cluster's stack names it (about 16 times a cluster in ``render``).
    """
    return child_name(cluster_name, "cluster-kubeconfig")


# The parts of a deployment's template a ModelReplica copies (scheduling.md, replica_object):
# a change to any of them is a new revision. clusterSelector and tolerations only steer
# placement; a change there re-places a replica that no longer fits, never restarts one.
_REVISION_KEYS: Final = ("engines", "modelCacheRef", "serving")


def template_hash(template: Mapping[str, object]) -> str:
    """The revision of a deployment's ``spec.template`` (as wire data): 10 hex digits.

    SHA-256 of the canonical JSON (sorted keys, no spaces) of the template's labels and the
    spec fields a replica copies; the same template always gives the same hash.
    """
    spec = template.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    metadata = template.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    content = {"labels": labels or {}, **{k: spec[k] for k in _REVISION_KEYS if k in spec}}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:10]


def replica_key(cluster: str, index: int) -> str:
    """The Crossplane resource key of a replica in the deployment function's desired state."""
    return f"{REPLICA_KEY_PREFIX}{cluster}-{index}"


def usage_key(cluster: str, index: int) -> str:
    """The Crossplane resource key of a replica's Usage in the deployment function's desired
    state."""
    return f"{USAGE_KEY_PREFIX}{cluster}-{index}"


def cache_usage_key(cluster: str) -> str:
    """The Crossplane resource key of a cache's Usage of ``cluster`` in the cache function's
    desired state (its other keys start ``cache-``)."""
    return f"{USAGE_KEY_PREFIX}{cluster}"


def replica_usage_name(replica: str) -> str:
    """A replica's Usage is named as the replica (as its ModelEndpoint is): Crossplane's
    refusal to delete the cluster names the Usage and its namespace, so it names the replica."""
    return replica


def cache_usage_name(cache: str, cluster: str) -> str:
    """A cache's Usage of one cluster, in the cache's namespace: the cache and the cluster."""
    return dns_name(cache, cluster)


def endpoint_key(cluster: str, index: int) -> str:
    """The Crossplane resource key of an endpoint in the deployment function's desired state."""
    return f"{ENDPOINT_KEY_PREFIX}{cluster}-{index}"


# The routable backend of a ModelEndpoint on the control plane: an Envoy Gateway Backend
# (its origin), the Envoy AI Gateway AIServiceBackend (its API schema and prefix) and, with a
# credential, the BackendSecurityPolicy naming the user's Secret.
ENDPOINT_LABEL: Final = "modelplane.ai/endpoint"
BACKEND_KEY: Final = "backend"
AI_SERVICE_BACKEND_KEY: Final = "ai-service-backend"
BACKEND_SECURITY_POLICY_KEY: Final = "backend-security-policy"


def backend_service_name(endpoint_name: str) -> str:
    """The Backend, AIServiceBackend and BackendSecurityPolicy of a ModelEndpoint."""
    return dns_name(endpoint_name, "backend")


# ModelService and InferenceGateway: the control-plane route and Gateway.
SERVICE_ROUTE_KEY: Final = "ai-gateway-route"
SERVICE_RETRY_KEY: Final = "retry-policy"
FRONT_GATEWAY_KEY: Final = "gateway"
SERVICE_LABEL: Final = "modelplane.ai/service"


def service_route_name(service: str) -> str:
    """The AIGatewayRoute of a ModelService, in its namespace (and the HTTPRoute it generates)."""
    return dns_name(service, "route")


def front_gateway_name(inference_gateway: str) -> str:
    """The Gateway an InferenceGateway composes, in ``SYSTEM_NAMESPACE`` on the control plane."""
    return dns_name("modelplane", inference_gateway)


def service_model(namespace: str, service: str) -> str:
    """The model a caller names to reach a ModelService: ``<ns>/<name>``."""
    return f"{namespace}/{service}"


# Usage records (docs/crossplane.md, "Usage records"). Envoy AI Gateway stores what a route's
# llmRequestCosts capture in Envoy's dynamic metadata under this namespace
# (envoyproxy/ai-gateway api/v1beta1 AIGatewayFilterMetadataNamespace @ v1.1.0); the keys are
# ours: (metadata key, the cost type it captures, the usage record's field that logs it).
AI_GATEWAY_METADATA_NAMESPACE: Final = "io.envoy.ai_gateway"
USAGE_COSTS: Final = (
    ("llm_input_token", "InputToken", "input_tokens"),
    ("llm_output_token", "OutputToken", "output_tokens"),
    ("llm_total_token", "TotalToken", "total_tokens"),
)
# The header the caller-auth step forwards the authenticated caller's id in (Envoy Gateway's
# apiKeyAuth forwardClientIDHeader; upstream Modelplane's name, RedbackThomson/modelplane
# docs/content/platform/inference-gateway.md @ 667562db). It lives only inside the
# gateway: Envoy AI Gateway copies it into dynamic metadata under CALLER_METADATA_KEY before
# the router (its chart's controller.logRequestHeaderAttributes, stack/components.py), the usage
# record logs that copy, and every AIServiceBackend removes the header before the request goes
# upstream (composition/backend.py), so no backend, hosted or ours, learns who called.
CALLER_HEADER: Final = "x-modelplane-caller"
CALLER_METADATA_KEY: Final = "modelplane.caller"
# The header Envoy AI Gateway sets from the request body's "model" before routing
# (envoyproxy/ai-gateway api/v1beta1/shared_types.go AIModelHeaderKey @ v1.1.0).
MODEL_HEADER: Final = "x-ai-eg-model"
