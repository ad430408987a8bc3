"""The ModelEndpoint of a ready replica (docs/reconcile.md, "Conditions, events and readiness";
docs/composition.md, "Routable endpoints").
"""

from __future__ import annotations

from collections.abc import Mapping

from modelplane.api import GROUP_VERSION, ModelEndpoint, ModelReplica
from modelplane.naming import DEPLOYMENT_LABEL, REMOTE_NAMESPACE_LABEL


def model_endpoint(
    replica: ModelReplica,
    ready: bool,
    gateway_address: str | None,
    tls_hostname: str | None = None,
) -> ModelEndpoint | None:
    """The endpoint of ``replica`` (its desired form), or None when it must not exist.

    It exists exactly when the replica is ready and its cluster publishes a gateway
    address: no traffic may reach a replica that is still loading weights. Its origin is
    the cluster's gateway, ``https://<tls_hostname>`` when the cluster declares
    ``spec.gateway.tls`` (its HTTPS listener is on 443; the front door connects to the
    address and verifies that name, composition/frontdoor.py), else ``http://<address>``;
    its prefix the replica's route there (``/<ns>/<replica>/v1``,
    rewritten to ``/v1`` by the cluster's route); its model the name the engine serves,
    ``<ns>/<deployment>`` (MODELPLANE_SERVED_MODEL_NAME).
    """
    if not ready or not gateway_address:
        return None
    namespace = replica.metadata.namespace or "default"
    name = replica.metadata.name or ""
    prefix = f"/{namespace}/{name}/"
    deployment = (replica.metadata.labels or {}).get(DEPLOYMENT_LABEL, name)
    return ModelEndpoint.model_validate(
        {
            "apiVersion": GROUP_VERSION,
            "kind": "ModelEndpoint",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": endpoint_labels(replica.metadata.labels or {}),
            },
            "spec": {
                "origin": (
                    f"https://{tls_hostname}" if tls_hostname else f"http://{gateway_address}"
                ),
                "api": {"schema": "OpenAI", "prefix": f"{prefix}v1"},
                "model": f"{namespace}/{deployment}",
            },
        }
    )


def endpoint_labels(replica_labels: Mapping[str, str]) -> dict[str, str]:
    """The replica's labels an endpoint carries: all but ``modelplane.ai/remote-namespace``
    (docs/api.md). That one says where the replica's objects are on its cluster, a fact of
    the replica's composition: the endpoint is reached through the cluster's gateway
    wherever they are, and a ModelService selecting on it would follow an internal layout
    that changes when a replica is replaced into its team namespace."""
    return {k: v for k, v in replica_labels.items() if k != REMOTE_NAMESPACE_LABEL}
