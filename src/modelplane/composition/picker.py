"""The endpoint picker of a replica: default or user-written (docs/composition.md, "Pickers").

The default picker follows llm-d-router v0.10.0's chart (docs/composition.md, "The default picker").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from modelplane.api import ModelReplica
from modelplane.api.pod import ReplicaPickerContainer
from modelplane.composition.containers import (
    PICKER_CONFIG,
    POOL_NAME,
    POOL_NAMESPACE,
    SERVED_MODEL_NAME,
    env_entry,
    merge_env,
    resources,
)
from modelplane.composition.names import (
    KEY_EPP,
    KEY_EPP_CONFIG,
    KEY_EPP_DISRUPTION_BUDGET,
    KEY_EPP_ROLE,
    KEY_EPP_ROLE_BINDING,
    KEY_EPP_SERVICE,
    KEY_EPP_SERVICE_ACCOUNT,
    ReplicaNames,
)
from modelplane.composition.namespaces import SHARED_NAMESPACE
from modelplane.composition.routing import EXT_PROC_APP_PROTOCOL, PICKER_GRPC_PORT, POOL_GROUP
from modelplane.composition.types import Json
from modelplane.naming import (
    DEPLOYMENT_LABEL,
    DEPLOYMENT_NAMESPACE_LABEL,
    EPP_CONFIG_CHECKSUM_ANNOTATION,
    REPLICA_LABEL,
)

# The default picker follows llm-d-router v0.10.0 as its own chart runs it
# (llm-d/llm-d-router config/charts/routerlib/templates/_deployment.yaml, values.yaml,
# _config.yaml, _rbac.yaml and llm-d-router-gateway/templates/rbac.yaml @ v0.10.0).
PICKER_RELEASE = "v0.10.0"
DEFAULT_PICKER_IMAGE = f"ghcr.io/llm-d/llm-d-router-endpoint-picker:{PICKER_RELEASE}"
DEFAULT_PICKER_CONTAINER = "epp"
PICKER_HEALTH_PORT = 9003
PICKER_METRICS_PORT = 9090
# The gRPC health service the picker registers for a single replica (its chart's probes).
PICKER_HEALTH_SERVICE = "inference-extension"
# The chart's resources: CPU unbounded for bursts, memory capped.
PICKER_RESOURCES: Json = {"requests": {"cpu": "8", "memory": "8Gi"}, "limits": {"memory": "16Gi"}}
# Mirrors the longest grace period of the pods in the pool (the chart's comment).
PICKER_TERMINATION_GRACE_SECONDS = 130

# High availability (docs/composition.md, "Two pickers per replica"). Every replica runs
# this many pickers, all serving: leader election stays off (its v0.10.0 readiness passes
# only on the leader, pkg/epp/server/options.go and cmd/epp/runner/health.go, which no
# disruption budget or rolling update can work with), so each keeps its own prefix index.
PICKER_REPLICAS = 2
# At most one picker down at a time, for a drain (the PodDisruptionBudget) and for a
# rollout alike: one surge pod, and one old pod may go before its replacement is ready, so
# a rollout never waits for room for a third picker and never leaves none available.
PICKER_MAX_UNAVAILABLE = 1
PICKER_MAX_SURGE = 1
# Preferred, not required: spread across nodes when there is room, and still run both on a
# one-node cluster (the budget alone keeps a drain from taking both).
PICKER_SPREAD_TOPOLOGY_KEY = "kubernetes.io/hostname"
PICKER_SPREAD_WEIGHT = 100
# An unready picker is out of the Service and serves nothing, so evicting it costs nothing;
# the default (IfHealthyBudget) would block every drain while both are unready.
PICKER_UNHEALTHY_EVICTION = "AlwaysAllow"
CONFIG_KEY = "epp-config.yaml"
CONFIG_DIR = "/config"
CONFIG_PATH = f"{CONFIG_DIR}/{CONFIG_KEY}"
CONFIG_VOLUME = "config"
RBAC_GROUP = "rbac.authorization.k8s.io"
# The name of the picker objects every replica on a cluster shares (its ServiceAccount,
# Role, RoleBinding and the default config's ConfigMap), composed once by the cluster.
SHARED_PICKER_NAME = "modelplane-epp"
READ = ("get", "list", "watch")

# What the picker lists and watches, namespace-scoped (pkg/epp/server/controller_manager.go,
# controller_config.go @ v0.10.0): its pods, its InferencePool, and InferenceObjective and
# InferenceModelRewrite in whichever of the two groups serves them (llm-d.ai preferred). A
# forbidden list leaves the cache unsynced and the picker exits, so both groups are granted.
PICKER_ROLE_RULES: tuple[Json, ...] = (
    {"apiGroups": [""], "resources": ["pods"], "verbs": list(READ)},
    {"apiGroups": [POOL_GROUP], "resources": ["inferencepools"], "verbs": list(READ)},
    {
        "apiGroups": ["inference.networking.x-k8s.io"],
        "resources": ["inferenceobjectives", "inferencemodelrewrites"],
        "verbs": list(READ),
    },
    {
        "apiGroups": ["llm-d.ai"],
        "resources": ["inferenceobjectives", "inferencemodelrewrites"],
        "verbs": list(READ),
    },
)


def default_picker_config() -> Json:
    """The default EndpointPickerConfig: the chart's ``default-plugins.yaml`` for vLLM over HTTP.

    Loads on v0.10.0 without a deprecation warning. The prefix producer, picker and
    profile handler are the loader's system defaults; the producer reads the block size
    from the engine's metrics (``autoTune`` defaults to true since v0.9).
    """
    return {
        "apiVersion": "llm-d.ai/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            {"type": "queue-scorer"},
            {"type": "kv-cache-utilization-scorer"},
            {"type": "prefix-cache-scorer"},
            {
                "type": "metrics-data-source",
                "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True},
            },
            {"type": "core-metrics-extractor"},
        ],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [
                    {"pluginRef": "queue-scorer", "weight": 2},
                    {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                    {"pluginRef": "prefix-cache-scorer", "weight": 3},
                ],
            }
        ],
    }


def config_text(config: Mapping[str, object]) -> str:
    """Canonical JSON, byte-identical across implementations so the checksum is too."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def config_checksum(text: str) -> str:
    """Lowercase hex sha256 of the config text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# The default config's text, the same in every namespace of every cluster: dumped once.
DEFAULT_CONFIG_TEXT = config_text(default_picker_config())


def picker_env(names: ReplicaNames, has_config: bool) -> list[Json]:
    """The environment Modelplane injects into the picker container, in order."""
    env = [
        env_entry(SERVED_MODEL_NAME, names.served_model_name),
        env_entry(POOL_NAME, names.pool),
        env_entry(POOL_NAMESPACE, names.remote),
    ]
    if has_config:
        env.append(env_entry(PICKER_CONFIG, CONFIG_PATH))
    return env


def _config_mounts() -> list[Json]:
    return [{"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR}]


def _health_probe(**timing: int) -> Json:
    """A gRPC probe of the picker's health service on its health port."""
    return {"grpc": {"port": PICKER_HEALTH_PORT, "service": PICKER_HEALTH_SERVICE}, **timing}


def default_picker_container(names: ReplicaNames) -> Json:
    """The container of Modelplane's default picker, as llm-d-router's chart runs it."""
    return {
        "name": DEFAULT_PICKER_CONTAINER,
        "image": DEFAULT_PICKER_IMAGE,
        "args": [
            f"--pool-name={names.pool}",
            f"--pool-namespace={names.remote}",
            f"--pool-group={POOL_GROUP}",
            "--zap-encoder=json",
            f"--config-file={CONFIG_PATH}",
            f"--grpc-port={PICKER_GRPC_PORT}",
            f"--grpc-health-port={PICKER_HEALTH_PORT}",
            # The binary defaults tracing on, exporting to localhost:4317; the chart turns
            # it off unless a collector is configured, and Modelplane configures none.
            "--tracing=false",
            # Both pickers serve (active-active). The chart turns leader election on for
            # more than one replica; off is the binary's default and its documented
            # active-active setting, written out so the manifest says which mode runs.
            "--ha-enable-leader-election=false",
        ],
        "env": picker_env(names, has_config=True),
        "ports": [
            {"name": "grpc", "containerPort": PICKER_GRPC_PORT},
            {"name": "grpc-health", "containerPort": PICKER_HEALTH_PORT},
            {"name": "metrics", "containerPort": PICKER_METRICS_PORT},
        ],
        # A dead picker must leave the Service: ext-proc calls would otherwise hang on it.
        "livenessProbe": _health_probe(initialDelaySeconds=5, periodSeconds=10),
        "readinessProbe": _health_probe(periodSeconds=2),
        "resources": {k: dict(v) for k, v in PICKER_RESOURCES.items()},
        "volumeMounts": _config_mounts(),
    }


def user_picker_container(
    names: ReplicaNames, container: ReplicaPickerContainer, has_config: bool
) -> Json:
    """The user's single picker container, as written, plus Modelplane's plumbing."""
    out: Json = {"name": container.name, "image": container.image}
    if container.command is not None:
        out["command"] = list(container.command)
    if container.args is not None:
        out["args"] = list(container.args)
    out["env"] = merge_env(picker_env(names, has_config), container.env)
    user_resources = resources(container.resources, claim=False)
    if user_resources is not None:
        out["resources"] = user_resources
    out["ports"] = [{"name": "grpc", "containerPort": PICKER_GRPC_PORT}]
    if has_config:
        out["volumeMounts"] = _config_mounts()
    return out


def _meta(names: ReplicaNames) -> Json:
    return _named(names.epp, names.remote)


def _named(name: str, namespace: str) -> Json:
    return {"name": name, "namespace": namespace}


def picker_selector(names: ReplicaNames) -> Json:
    """The labels that select the replica's picker pods (Deployment, Service, budget)."""
    return {"app": names.epp}


def _spread(names: ReplicaNames) -> Json:
    """Prefer the replica's pickers on different nodes."""
    term = {
        "labelSelector": {"matchLabels": picker_selector(names)},
        "topologyKey": PICKER_SPREAD_TOPOLOGY_KEY,
    }
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": PICKER_SPREAD_WEIGHT, "podAffinityTerm": term}
            ]
        }
    }


def picker_deployment(
    names: ReplicaNames,
    container: Json,
    checksum: str | None,
    image_pull_secrets: list[Json] | None,
    config_map_name: str,
) -> Json:
    """The picker Deployment frame shared by both pickers.

    It runs as the cluster's shared ServiceAccount: until the cluster has composed it the
    ReplicaSet cannot create pods, so the Deployment never rolls out and the replica is not
    Ready (docs/composition.md, "Objects shared on a cluster").
    """
    template_meta: Json = {
        "labels": {
            **picker_selector(names),
            DEPLOYMENT_LABEL: names.deployment,
            DEPLOYMENT_NAMESPACE_LABEL: names.namespace,
            REPLICA_LABEL: names.replica,
        }
    }
    if checksum is not None:
        # A config change changes the pod template, which rolls the picker.
        template_meta["annotations"] = {EPP_CONFIG_CHECKSUM_ANNOTATION: checksum}
    pod: Json = {
        "serviceAccountName": SHARED_PICKER_NAME,
        "terminationGracePeriodSeconds": PICKER_TERMINATION_GRACE_SECONDS,
        "affinity": _spread(names),
        "containers": [container],
    }
    if checksum is not None:
        pod["volumes"] = [{"name": CONFIG_VOLUME, "configMap": {"name": config_map_name}}]
    if image_pull_secrets:
        pod["imagePullSecrets"] = image_pull_secrets
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(names),
        "spec": {
            "replicas": PICKER_REPLICAS,
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {
                    "maxSurge": PICKER_MAX_SURGE,
                    "maxUnavailable": PICKER_MAX_UNAVAILABLE,
                },
            },
            "selector": {"matchLabels": picker_selector(names)},
            "template": {"metadata": template_meta, "spec": pod},
        },
    }


def picker_disruption_budget(names: ReplicaNames) -> Json:
    """The budget that lets a drain evict at most one of the replica's pickers at a time."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(names),
        "spec": {
            "maxUnavailable": PICKER_MAX_UNAVAILABLE,
            "selector": {"matchLabels": picker_selector(names)},
            "unhealthyPodEvictionPolicy": PICKER_UNHEALTHY_EVICTION,
        },
    }


def service_account(namespace: str) -> Json:
    """The pickers' ServiceAccount, shared in a namespace of a cluster."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _named(SHARED_PICKER_NAME, namespace),
    }


def role(namespace: str) -> Json:
    """The pickers' Role: read-only rules, no wildcard."""
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "Role",
        "metadata": _named(SHARED_PICKER_NAME, namespace),
        "rules": [{k: list(v) for k, v in r.items()} for r in PICKER_ROLE_RULES],
    }


def role_binding(namespace: str) -> Json:
    """Binds the pickers' Role to their ServiceAccount."""
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": _named(SHARED_PICKER_NAME, namespace),
        "subjects": [
            {"kind": "ServiceAccount", "name": SHARED_PICKER_NAME, "namespace": namespace}
        ],
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": SHARED_PICKER_NAME},
    }


def config_map(name: str, namespace: str, text: str) -> Json:
    """The ConfigMap ``namespace/name`` holding a picker's config text."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _named(name, namespace),
        "data": {CONFIG_KEY: text},
    }


def shared_picker_objects(namespace: str = SHARED_NAMESPACE) -> list[tuple[str, Json]]:
    """The picker objects every replica in ``namespace`` of a cluster shares, with their
    resource keys.

    The same for every replica there: the Role's rules read the whole namespace, so one
    ServiceAccount per (cluster, namespace) grants exactly what one per replica did; the
    default picker's config does not depend on the replica.
    """
    text = DEFAULT_CONFIG_TEXT
    return [
        (KEY_EPP_SERVICE_ACCOUNT, service_account(namespace)),
        (KEY_EPP_ROLE, role(namespace)),
        (KEY_EPP_ROLE_BINDING, role_binding(namespace)),
        (KEY_EPP_CONFIG, config_map(SHARED_PICKER_NAME, namespace, text)),
    ]


def picker_service(names: ReplicaNames, metrics: bool) -> Json:
    """The Service the pool's endpointPickerRef points at (and the default picker's metrics)."""
    ports: list[Json] = [
        {
            "name": "grpc-ext-proc",
            "port": PICKER_GRPC_PORT,
            "targetPort": PICKER_GRPC_PORT,
            "appProtocol": EXT_PROC_APP_PROTOCOL,
        }
    ]
    if metrics:
        ports.append(
            {"name": "http-metrics", "port": PICKER_METRICS_PORT, "targetPort": PICKER_METRICS_PORT}
        )
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names),
        "spec": {"selector": picker_selector(names), "ports": ports},
    }


def uses_default_picker(replica: ModelReplica) -> bool:
    """Whether the replica runs Modelplane's default picker (``router`` omitted)."""
    serving = replica.spec.serving
    return serving is None or serving.router != "EndpointPicker" or serving.endpoint_picker is None


def _picker_parts(
    replica: ModelReplica, names: ReplicaNames
) -> tuple[Json, str | None, list[Json] | None]:
    """The picker's container, its config text (None without config) and pull secrets."""
    serving = replica.spec.serving
    picker = serving.endpoint_picker if serving is not None else None
    if uses_default_picker(replica) or picker is None:
        return default_picker_container(names), DEFAULT_CONFIG_TEXT, None
    user_text = config_text(picker.config) if picker.config is not None else None
    spec = picker.template.spec
    container = user_picker_container(names, spec.containers[0], user_text is not None)
    secrets = [{"name": s.name} for s in spec.image_pull_secrets or []] or None
    return container, user_text, secrets


def picker_objects(replica: ModelReplica, names: ReplicaNames) -> list[tuple[str, Json]]:
    """The replica's own picker objects with their resource keys, in object order.

    The ServiceAccount, Role, RoleBinding and the default config's ConfigMap are the
    cluster's (``shared_picker_objects``); a user's config keeps its own ConfigMap.
    """
    container, text, secrets = _picker_parts(replica, names)
    checksum = config_checksum(text) if text is not None else None
    objects: list[tuple[str, Json]] = []
    own_config = text is not None and not uses_default_picker(replica)
    if own_config and text is not None:
        objects.append((KEY_EPP_CONFIG, config_map(names.epp, names.remote, text)))
    config_name = names.epp if own_config else SHARED_PICKER_NAME
    deployment = picker_deployment(names, container, checksum, secrets, config_name)
    objects.append((KEY_EPP, deployment))
    objects.append((KEY_EPP_DISRUPTION_BUDGET, picker_disruption_budget(names)))
    objects.append((KEY_EPP_SERVICE, picker_service(names, uses_default_picker(replica))))
    return objects
