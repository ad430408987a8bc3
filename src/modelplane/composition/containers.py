"""Containers of a member's pods and of the picker: what Modelplane injects (docs/composition.md,
"Pods").
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from modelplane.api.pod import EnvVar, ReplicaContainer, Resources
from modelplane.composition.gangs import gang_env
from modelplane.composition.members import ENGINE_CONTAINER, MemberContext, http_port
from modelplane.composition.types import Json

SERVED_MODEL_NAME = "MODELPLANE_SERVED_MODEL_NAME"
POOL_NAME = "MODELPLANE_POOL_NAME"
POOL_NAMESPACE = "MODELPLANE_POOL_NAMESPACE"
PICKER_CONFIG = "MODELPLANE_PICKER_CONFIG"

CLAIM_NAME = "devices"
DSHM_VOLUME = "dshm"
CACHE_VOLUME = "model-cache"
CACHE_MOUNT_PATH = "/mnt/models"
# Where huggingface_hub keeps its hub cache (models--<org>--<name>/snapshots/<commit>/);
# it takes precedence over HF_HOME/hub (huggingface/huggingface_hub v0.36.2,
# src/huggingface_hub/constants.py). The download Job and every pod that mounts the cache
# set it to the mount, so `--model=<repo id>` resolves there.
HF_HUB_CACHE = "HF_HUB_CACHE"
# A pod mounting the cache starts only once it is staged (the wait-for-model-cache init
# container), so the hub is never asked: a repo id resolves from the cache alone.
HF_HUB_OFFLINE = "HF_HUB_OFFLINE"

# The engine's health path: our readiness probe and GKE's load balancer health check both
# ask it, so a pod the kubelet counts ready is one the load balancer counts healthy.
HEALTH_PATH = "/health"

MANAGED_PROBE: Json = {
    "httpGet": {"path": HEALTH_PATH, "port": "http"},
    "initialDelaySeconds": 30,
    "periodSeconds": 10,
    "timeoutSeconds": 5,
}


def env_entry(name: str, value: str) -> Json:
    """A literal environment variable."""
    return {"name": name, "value": value}


def merge_env(injected: Sequence[Json], user: Sequence[EnvVar] | None) -> list[Json]:
    """Injected entries first, then the user's (unset fields dropped).

    An injected entry whose name the user also sets is left out, so the user's entry
    stays where the user put it (only a hand-written replica can hit this).
    """
    user_entries = [e.model_dump(by_alias=True, exclude_none=True, mode="json") for e in user or []]
    user_names = {e["name"] for e in user_entries}
    return [e for e in injected if e["name"] not in user_names] + user_entries


def cache_env() -> list[Json]:
    """The hub cache of a mounted ModelCache, offline: what every container that mounts it gets."""
    return [env_entry(HF_HUB_CACHE, CACHE_MOUNT_PATH), env_entry(HF_HUB_OFFLINE, "1")]


def member_env(ctx: MemberContext) -> list[Json]:
    """The entries injected into every container of a member's pods, in order.

    The served model name everywhere; in a gang, the gang index, leader address and
    rank of ``gangs.gang_env``, which never name an operator-injected variable; with a
    ModelCache, ``HF_HUB_CACHE`` and ``HF_HUB_OFFLINE`` last (the user may override them).
    """
    env = [env_entry(SERVED_MODEL_NAME, ctx.names.served_model_name)]
    if ctx.member.role != "Standalone":
        env += gang_env(ctx.names, ctx.engine.name, ctx.member.role, ctx.stack)
    if ctx.cache_pvc is not None:
        env += cache_env()
    return env


def resources(user: Resources | None, claim: bool) -> Json | None:
    """The user's requests and limits, plus the member's device claim; None when empty."""
    out: Json = user.model_dump(by_alias=True, exclude_none=True, mode="json") if user else {}
    if claim:
        out["claims"] = [{"name": CLAIM_NAME}]
    return out or None


def _ports(container: ReplicaContainer, prepend_http: bool) -> list[Json] | None:
    ports = [
        p.model_dump(by_alias=True, exclude_none=True, mode="json") for p in container.ports or []
    ]
    if prepend_http and http_port(container) is None:
        ports.insert(0, {"name": "http", "containerPort": 8000})
    return ports or None


def _put(out: Json, key: str, value: object) -> None:
    """Set ``key`` only when there is a value: unset fields are omitted, never empty."""
    if value is not None:
        out[key] = value


def member_container(ctx: MemberContext, container: ReplicaContainer) -> Json:
    """One container of a member's pod: the engine container or a sidecar (docs/composition.md,
    "Pods").
    """
    engine = container.name == ENGINE_CONTAINER
    serving_engine = engine and ctx.serving
    out: Json = {"name": container.name, "image": container.image}
    _put(out, "command", list(container.command) if container.command is not None else None)
    # Verbatim, with or without a cache: the same `--model=<repo id>` works in both.
    _put(out, "args", list(container.args) if container.args is not None else None)
    out["env"] = merge_env(member_env(ctx), container.env)
    _put(out, "ports", _ports(container, prepend_http=serving_engine))
    if serving_engine:
        out["readinessProbe"] = copy.deepcopy(MANAGED_PROBE)
    elif not engine and container.readiness_probe is not None:
        out["readinessProbe"] = container.readiness_probe.model_dump(
            by_alias=True, exclude_none=True, mode="json"
        )
    _put(out, "resources", resources(container.resources, claim=engine and ctx.claims))
    mounts = [{"name": DSHM_VOLUME, "mountPath": "/dev/shm"}] if engine else []
    if ctx.cache_pvc is not None:
        mounts.append({"name": CACHE_VOLUME, "mountPath": CACHE_MOUNT_PATH})
    _put(out, "volumeMounts", mounts or None)
    return out
