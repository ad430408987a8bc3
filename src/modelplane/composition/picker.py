"""The endpoint picker of a replica: default or user-written (composition.md §9.4–§9.6)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

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
from modelplane.composition.members import engine_container, serving_member
from modelplane.composition.names import (
    KEY_EPP,
    KEY_EPP_CONFIG,
    KEY_EPP_ROLE,
    KEY_EPP_ROLE_BINDING,
    KEY_EPP_SERVICE,
    KEY_EPP_SERVICE_ACCOUNT,
    ReplicaNames,
)
from modelplane.composition.routing import PICKER_GRPC_PORT, POOL_GROUP
from modelplane.composition.types import REMOTE_NAMESPACE, Json

DEFAULT_PICKER_IMAGE = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0"
DEFAULT_PICKER_CONTAINER = "epp"
DEFAULT_BLOCK_SIZE = 16
PICKER_HEALTH_PORT = 9003
CONFIG_KEY = "epp-config.yaml"
CONFIG_DIR = "/config"
CONFIG_PATH = f"{CONFIG_DIR}/{CONFIG_KEY}"
CONFIG_VOLUME = "config"
CHECKSUM_ANNOTATION = "modelplane.ai/epp-config-checksum"
RBAC_GROUP = "rbac.authorization.k8s.io"

# The least the picker needs to watch its pool and endpoints, namespace-scoped (§9.4).
PICKER_ROLE_RULES: tuple[Json, ...] = (
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["inference.networking.k8s.io"],
        "resources": ["inferencepools"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["inference.networking.x-k8s.io"],
        "resources": ["inferenceobjectives"],
        "verbs": ["get", "list", "watch"],
    },
)

_BLOCK_FLAGS = ("--block-size", "--page-size")
_DIGITS = re.compile(r"^[0-9]+$")


def block_size(args: Sequence[str]) -> int:
    """``BLOCK`` of §9.5: the first --block-size/--page-size value when numeric, else 16."""
    for i, arg in enumerate(args):
        flag, eq, inline = arg.partition("=")
        if flag not in _BLOCK_FLAGS:
            continue
        value = inline if eq else (args[i + 1] if i + 1 < len(args) else "")
        return int(value) if _DIGITS.match(value) else DEFAULT_BLOCK_SIZE
    return DEFAULT_BLOCK_SIZE


def replica_block_size(replica: ModelReplica) -> int:
    """``BLOCK`` read from the first engine's serving engine container."""
    engines = replica.spec.engines
    member = serving_member(engines[0]) if engines else None
    container = engine_container(member) if member is not None else None
    return block_size(container.args or []) if container is not None else DEFAULT_BLOCK_SIZE


def default_picker_config(block: int) -> Json:
    """The default llm-d EndpointPickerConfig for Unified serving (§9.5).

    The prefix-cache producer must be explicit with ``autoTune: false``: otherwise its
    block size is 0 and it never learns prefixes.
    """
    return {
        "apiVersion": "llm-d.ai/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            {
                "type": "approx-prefix-cache-producer",
                "parameters": {
                    "autoTune": False,
                    "blockSizeTokens": block,
                    "maxPrefixBlocksToMatch": 256,
                    "lruCapacityPerServer": 31250,
                },
            },
            {"type": "prefix-cache-scorer"},
            {"type": "queue-scorer"},
            {"type": "max-score-picker"},
        ],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [
                    {"pluginRef": "max-score-picker"},
                    {"pluginRef": "prefix-cache-scorer", "weight": 2},
                    {"pluginRef": "queue-scorer", "weight": 1},
                ],
            }
        ],
    }


def config_text(config: Any) -> str:
    """Canonical JSON, byte-identical across implementations so the checksum is too (§9.4)."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def config_checksum(text: str) -> str:
    """Lowercase hex sha256 of the config text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def picker_env(names: ReplicaNames, has_config: bool) -> list[Json]:
    """The entries §6.2 injects into the picker container, in order."""
    env = [
        env_entry(SERVED_MODEL_NAME, names.served_model_name),
        env_entry(POOL_NAME, names.pool),
        env_entry(POOL_NAMESPACE, REMOTE_NAMESPACE),
    ]
    if has_config:
        env.append(env_entry(PICKER_CONFIG, CONFIG_PATH))
    return env


def _config_mounts() -> list[Json]:
    return [{"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR}]


def default_picker_container(names: ReplicaNames) -> Json:
    """The container of Modelplane's default picker (§9.5)."""
    return {
        "name": DEFAULT_PICKER_CONTAINER,
        "image": DEFAULT_PICKER_IMAGE,
        "args": [
            f"--pool-name={names.pool}",
            f"--pool-namespace={REMOTE_NAMESPACE}",
            f"--pool-group={POOL_GROUP}",
            f"--config-file={CONFIG_PATH}",
            f"--grpc-port={PICKER_GRPC_PORT}",
        ],
        "env": picker_env(names, has_config=True),
        "ports": [
            {"name": "grpc", "containerPort": PICKER_GRPC_PORT},
            {"name": "grpc-health", "containerPort": PICKER_HEALTH_PORT},
        ],
        "volumeMounts": _config_mounts(),
    }


def user_picker_container(
    names: ReplicaNames, container: ReplicaPickerContainer, has_config: bool
) -> Json:
    """The user's single picker container, as written, plus §9.6's plumbing."""
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
    return {"name": names.epp, "namespace": REMOTE_NAMESPACE}


def picker_deployment(
    names: ReplicaNames,
    container: Json,
    checksum: str | None,
    image_pull_secrets: list[Json] | None,
) -> Json:
    """The picker Deployment frame shared by both pickers (§9.4)."""
    template_meta: Json = {
        "labels": {
            "app": names.epp,
            "modelplane.ai/deployment": names.deployment,
            "modelplane.ai/deployment-namespace": names.namespace,
            "modelplane.ai/replica": names.replica,
        }
    }
    if checksum is not None:
        # A config change changes the pod template, which rolls the picker.
        template_meta["annotations"] = {CHECKSUM_ANNOTATION: checksum}
    pod: Json = {"serviceAccountName": names.epp, "containers": [container]}
    if checksum is not None:
        pod["volumes"] = [{"name": CONFIG_VOLUME, "configMap": {"name": names.epp}}]
    if image_pull_secrets:
        pod["imagePullSecrets"] = image_pull_secrets
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(names),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": names.epp}},
            "template": {"metadata": template_meta, "spec": pod},
        },
    }


def service_account(names: ReplicaNames) -> Json:
    """The picker's ServiceAccount."""
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(names)}


def role(names: ReplicaNames) -> Json:
    """The picker's Role: exactly the rules of §9.4, no wildcard."""
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "Role",
        "metadata": _meta(names),
        "rules": [{k: list(v) for k, v in r.items()} for r in PICKER_ROLE_RULES],
    }


def role_binding(names: ReplicaNames) -> Json:
    """Binds the picker's Role to its ServiceAccount."""
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": _meta(names),
        "subjects": [{"kind": "ServiceAccount", "name": names.epp, "namespace": REMOTE_NAMESPACE}],
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": names.epp},
    }


def config_map(names: ReplicaNames, text: str) -> Json:
    """The ConfigMap holding the picker's config text."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(names),
        "data": {CONFIG_KEY: text},
    }


def picker_service(names: ReplicaNames) -> Json:
    """The Service the pool's endpointPickerRef points at."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names),
        "spec": {
            "selector": {"app": names.epp},
            "ports": [
                {
                    "name": "grpc-ext-proc",
                    "port": PICKER_GRPC_PORT,
                    "targetPort": PICKER_GRPC_PORT,
                    "appProtocol": "http2",
                }
            ],
        },
    }


def _picker_parts(
    replica: ModelReplica, names: ReplicaNames
) -> tuple[Json, str | None, list[Json] | None]:
    """The picker's container, its config text (None without config) and pull secrets."""
    serving = replica.spec.serving
    picker = serving.endpoint_picker if serving is not None else None
    if serving is None or serving.router != "EndpointPicker" or picker is None:
        text = config_text(default_picker_config(replica_block_size(replica)))
        return default_picker_container(names), text, None
    user_text = config_text(picker.config) if picker.config is not None else None
    spec = picker.template.spec
    container = user_picker_container(names, spec.containers[0], user_text is not None)
    secrets = [{"name": s.name} for s in spec.image_pull_secrets or []] or None
    return container, user_text, secrets


def picker_objects(replica: ModelReplica, names: ReplicaNames) -> list[tuple[str, Json]]:
    """The picker objects with their resource keys, in the order of §10 (rows 5 to 10)."""
    container, text, secrets = _picker_parts(replica, names)
    checksum = config_checksum(text) if text is not None else None
    objects: list[tuple[str, Json]] = [
        (KEY_EPP_SERVICE_ACCOUNT, service_account(names)),
        (KEY_EPP_ROLE, role(names)),
        (KEY_EPP_ROLE_BINDING, role_binding(names)),
    ]
    if text is not None:
        objects.append((KEY_EPP_CONFIG, config_map(names, text)))
    objects.append((KEY_EPP, picker_deployment(names, container, checksum, secrets)))
    objects.append((KEY_EPP_SERVICE, picker_service(names)))
    return objects
