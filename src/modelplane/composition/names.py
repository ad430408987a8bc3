"""Names and resource keys of one replica's composed objects (docs/composition.md, "Names";
docs/composition.md, "Objects, in order").
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.api import ModelReplica
from modelplane.composition.namespaces import SHARED_NAMESPACE, remote_namespace
from modelplane.naming import DEPLOYMENT_LABEL, child_name, dns_name

# Name budgets (docs/composition.md, "Names"): LWS StatefulSet pod labels, Grove's derived names.
LEADER_WORKER_SET_MAX = 49
POD_CLIQUE_SET_MAX = 24

# Resource keys K that do not depend on an engine.
KEY_POOL = "inference-pool"
KEY_ROUTE = "model-route"
KEY_GATEWAY_BACKEND_POLICY = "gateway-backend-policy"
KEY_GATEWAY_HEALTH_CHECK = "gateway-health-check"
KEY_EPP_SERVICE_ACCOUNT = "epp-serviceaccount"
KEY_EPP_ROLE = "epp-role"
KEY_EPP_ROLE_BINDING = "epp-rolebinding"
KEY_EPP_CONFIG = "epp-config"
KEY_EPP = "epp"
KEY_EPP_DISRUPTION_BUDGET = "epp-disruption-budget"
KEY_EPP_SERVICE = "epp-service"
KEY_EPP_DESTINATION_RULE = "epp-destination-rule"


def workload_key(engine: str) -> str:
    """Resource key of an engine's workload."""
    return f"model-serving-{engine}"


def claim_key(engine: str, role: str) -> str:
    """Resource key of a member's ResourceClaimTemplate."""
    return f"resource-claim-{engine}-{role.lower()}"


def cache_pvc_name(namespace: str, cache: str) -> str:
    """The ModelCache PVC name, exactly as its creator names it.

    See docs/api.md, "ModelCache fields".
    """
    return child_name("modelcache", namespace, cache)


@dataclass(frozen=True, slots=True)
class ReplicaNames:
    """The names of one replica (``NS``, ``DEP``, ``R``) and ``REMOTE``, the namespace its
    remote objects are in on its cluster (composition/namespaces.py)."""

    namespace: str
    deployment: str
    replica: str
    remote: str = SHARED_NAMESPACE

    @property
    def serving_key(self) -> str:
        """``B``: the HTTPRoute name and the value of the serving label."""
        return dns_name(self.namespace, self.replica)

    @property
    def pool(self) -> str:
        """``POOL``: the InferencePool name."""
        return dns_name(self.namespace, self.replica, "pool")

    @property
    def epp(self) -> str:
        """``EPP``: the name of every endpoint picker object."""
        return dns_name(self.namespace, self.replica, "epp")

    @property
    def served_model_name(self) -> str:
        """``<NS>/<DEP>``, the value of MODELPLANE_SERVED_MODEL_NAME."""
        return f"{self.namespace}/{self.deployment}"

    @property
    def route_prefix(self) -> str:
        """The gateway path prefix of this replica, ``/<NS>/<R>/``."""
        return f"/{self.namespace}/{self.replica}/"

    def deployment_workload(self, engine: str) -> str:
        """``W``: the Deployment of a Standalone engine."""
        return dns_name(self.namespace, self.replica, engine)

    def leader_worker_set(self, engine: str) -> str:
        """The LeaderWorkerSet of a Leader + Worker engine on the Standard stack."""
        return dns_name(self.namespace, self.replica, engine, max_length=LEADER_WORKER_SET_MAX)

    def pod_clique_set(self, engine: str) -> str:
        """The Grove PodCliqueSet of a Leader + Worker engine on the Dynamo stack."""
        return dns_name(self.namespace, self.replica, engine, max_length=POD_CLIQUE_SET_MAX)

    def claim_template(self, engine: str, role: str) -> str:
        """The ResourceClaimTemplate of one member."""
        return dns_name(self.namespace, self.replica, engine, role.lower(), "devices")

    def delivery_object(self, key: str) -> str:
        """The provider-kubernetes Object carrying resource key ``key``."""
        return dns_name(self.replica, key)


def replica_names(replica: ModelReplica) -> ReplicaNames:
    """The names of a replica's objects.

    ``NS`` is the replica's namespace (``default`` when missing, as for any namespaced
    input); ``DEP`` is its ``modelplane.ai/deployment`` label, which the deployment
    function always writes. A hand-written replica without that label reads its own
    name as ``DEP`` so that the served model name still names something stable.
    """
    meta = replica.metadata
    replica_name = meta.name or ""
    labels = meta.labels or {}
    return ReplicaNames(
        namespace=meta.namespace or "default",
        deployment=labels.get(DEPLOYMENT_LABEL, replica_name),
        replica=replica_name,
        remote=remote_namespace(replica),
    )
