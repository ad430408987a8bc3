"""Inputs for runtime tests: objects as Crossplane observes them, and RunFunctionRequests.

Requests are built the way Crossplane builds them: the observed composite (with the
status and metadata the API server adds), observed composed resources by resource key,
the desired state accumulated so far, a context, and ``required_resources`` holding
what the previous response asked for (absent key: not fetched yet).
"""

from __future__ import annotations

import copy
import os
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from google.protobuf import json_format, struct_pb2

from modelplane.api import InferenceCluster, ModelReplica
from modelplane.composition.replica import cluster_info
from modelplane.naming import CLUSTER_LABEL
from modelplane.runtime.crossplane import dispatch
from modelplane.runtime.crossplane.proto import request_from_proto, response_to_proto
from modelplane.scheduling.occupancy import published_occupancy
from tests.builders import (
    GV,
    PROVIDER_CONFIG,
    SEED_SELECTOR,
    gpu_device,
    gpu_pool,
    inference_cluster,
    replica_labels,
    seed_replica_engine,
    seed_template_spec,
)
from tests.builders import inference_class as shared_inference_class
from tests.builders import model_cache as _model_cache
from tests.paths import REPO

SEL = SEED_SELECTOR


def server_metadata(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    """ObjectMeta as the API server returns it (uid, resourceVersion, generation...)."""
    meta: dict[str, Any] = {
        "name": name,
        "uid": f"uid-{name}",
        "resourceVersion": "12345",
        "generation": 3,
        "creationTimestamp": "2025-01-15T09:00:00Z",
    }
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update(extra)
    return meta


def inference_class(name: str = "h100-8x", count: int = 8) -> dict[str, Any]:
    """An InferenceClass: 8 H100s per node."""
    out = shared_inference_class(name, gpu_device(count, claim=None))
    out["metadata"] = server_metadata(name)
    return out


def existing_cluster(
    name: str = "us-east-1",
    *,
    pools: Sequence[tuple[str, str, int]] = (("h100", "h100-8x", 1),),
    status: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    identity: bool = False,
    components: str | None = None,
) -> dict[str, Any]:
    """A bring-your-own InferenceCluster, its nodePools as (name, className, nodeCount).

    ``components``: who brings its serving stack (absent reads Managed).
    """
    obj = inference_cluster(
        name,
        secret=f"{name}-kubeconfig",
        node_pools=[{"name": p, "className": c, "nodeCount": n} for p, c, n in pools],
    )
    obj["metadata"] = server_metadata(name, labels=dict(labels or {"tier": "production"}))
    if identity:
        obj["spec"]["cluster"]["existing"]["identitySecretRef"] = {
            "name": f"{name}-identity",
            "type": "AzureWorkloadIdentityCredentials",
        }
    if components is not None:
        obj["spec"]["cluster"]["existing"]["components"] = components
    if status is not None:
        obj["status"] = copy.deepcopy(dict(status))
    return obj


STACK_KEY_PREFIXES = ("stack-", "require-", "uses-", "helm-provider-config")


def plumbing(keyed: dict[str, Any]) -> dict[str, Any]:
    """The entries of a cluster answer that are not its serving stack (docs/stack.md)."""
    return {k: v for k, v in keyed.items() if not k.startswith(STACK_KEY_PREFIXES)}


def ready_status(name: str, *, gateway: str = "203.0.113.10", nodes: int = 1) -> dict[str, Any]:
    """What the cluster function publishes once the cluster is up."""
    return {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Available",
                "lastTransitionTime": "2025-01-15T09:00:00Z",
            },
            {
                "type": "Synced",
                "status": "True",
                "reason": "ReconcileSuccess",
                "lastTransitionTime": "2025-01-15T09:00:00Z",
            },
        ],
        "gateway": {"address": gateway},
        "providerConfigRef": {
            "kind": "ClusterProviderConfig",
            "name": f"{name}-cluster-kubeconfig-x",
        },
        "gpuPools": [gpu_pool("h100", nodes, gpu_device())],
        # Nothing is pinned to it yet: every pool free.
        "occupancy": {"replicas": []},
    }


def with_occupancy(
    cluster: Mapping[str, Any], world: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """``cluster`` with the ``status.occupancy`` its function publishes for ``world``'s replicas.

    Computed by the cluster function's own code on the cluster's published pools, from
    the ModelReplicas labelled for it (the function's requirement).
    """
    out = copy.deepcopy(dict(cluster))
    name = out["metadata"]["name"]
    model = InferenceCluster.model_validate(out)
    pools = model.status.gpu_pools if model.status is not None else None
    status = out.setdefault("status", {})
    if not pools:
        status.pop("occupancy", None)
        return out
    pinned = [
        ModelReplica.model_validate(o)
        for o in world
        if o.get("kind") == "ModelReplica"
        and o.get("metadata", {}).get("labels", {}).get(CLUSTER_LABEL) == name
    ]
    status["occupancy"] = published_occupancy(name, pools, pinned).to_wire()
    return out


def published_by_function(
    run: Callable[[fnv1.RunFunctionRequest], fnv1.RunFunctionResponse],
    cluster: Mapping[str, Any],
    world: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """``cluster`` with the ``status.occupancy`` the InferenceCluster function publishes.

    Crossplane's loop over ``run`` (a RunFunction): call, fetch what was asked for from
    ``world`` (the pinned replicas by label, the classes), call again.
    """
    first = run(request(cluster))
    rsp = run(request(cluster, required=satisfy(first, world)))
    out = copy.deepcopy(dict(cluster))
    status = out.setdefault("status", {})
    occupancy = composite_status(rsp).get("occupancy")
    if occupancy is None:
        status.pop("occupancy", None)
    else:
        status["occupancy"] = occupancy
    return out


def ready_cluster(name: str = "us-east-1", **kwargs: Any) -> dict[str, Any]:
    """A Ready InferenceCluster with a gateway, a provider config and one published pool."""
    return existing_cluster(name, status=ready_status(name, **kwargs))


def deployment(
    name: str = "qwen3-8b",
    namespace: str = "ml-team",
    replicas: int = 2,
    *,
    cache: str | None = None,
    selector: str = SEL,
) -> dict[str, Any]:
    """The seed's ModelDeployment, as observed (with a stale status Crossplane keeps)."""
    spec = seed_template_spec(selector)
    if cache is not None:
        spec["modelCacheRef"] = {"name": cache}
    return {
        "apiVersion": GV,
        "kind": "ModelDeployment",
        "metadata": server_metadata(name, namespace),
        "spec": {
            "replicas": replicas,
            "template": {"spec": spec},
            "crossplane": {"compositionRef": {"name": "modeldeployments.modelplane.ai"}},
        },
        "status": {
            "conditions": [
                {
                    "type": "Synced",
                    "status": "True",
                    "reason": "ReconcileSuccess",
                    "lastTransitionTime": "2025-01-15T09:00:00Z",
                }
            ]
        },
    }


def model_cache(name: str = "qwen", namespace: str = "ml-team") -> dict[str, Any]:
    """A ModelCache for the seed's model."""
    out = _model_cache(name, namespace)
    out["metadata"] = server_metadata(name, namespace)
    return out


def as_struct(data: Mapping[str, Any]) -> struct_pb2.Struct:
    """A dict as a Struct, through JSON as Crossplane's Go side does (numbers become doubles)."""
    return json_format.ParseDict(data, struct_pb2.Struct())


def request(
    composite: Mapping[str, Any] | None,
    *,
    observed: Mapping[str, Mapping[str, Any]] | None = None,
    required: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    desired: Mapping[str, Mapping[str, Any]] | None = None,
    tag: str = "tag-1",
) -> fnv1.RunFunctionRequest:
    """A RunFunctionRequest as Crossplane sends it to the first step of a pipeline."""
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag=tag))
    req.meta.capabilities.extend(
        [
            fnv1.CAPABILITY_CAPABILITIES,
            fnv1.CAPABILITY_REQUIRED_RESOURCES,
            fnv1.CAPABILITY_CONDITIONS,
        ]
    )
    if composite is not None:
        req.observed.composite.resource.CopyFrom(as_struct(composite))
    for key, obj in (observed or {}).items():
        req.observed.resources[key].resource.CopyFrom(as_struct(obj))
    for key, obj in (desired or {}).items():
        req.desired.resources[key].resource.CopyFrom(as_struct(obj))
    for key, items in (required or {}).items():
        resources = req.required_resources[key]
        resources.SetInParent()  # an empty Resources: fetched, none
        for item in items:
            resources.items.add().resource.CopyFrom(as_struct(item))
    req.context.CopyFrom(as_struct({"apiextensions.crossplane.io/environment": {"region": "us"}}))
    return req


def direct(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    """The function's own answer to ``req``, without the gRPC shell's requirements-only answer.

    Over gRPC a call missing a requirement is answered with the requirements alone
    (``dispatch.run_call``); this is what the function itself says about such a partial
    request (held state, kept objects), as it would on a call Crossplane did keep.
    """
    return response_to_proto(req, dispatch.run(request_from_proto(req)))


def to_dict(struct: struct_pb2.Struct) -> dict[str, Any]:
    """A Struct as JSON data, integral numbers as ints (as Crossplane's Go side reads them)."""
    data = json_format.MessageToDict(struct)

    def ints(value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, dict):
            return {k: ints(v) for k, v in value.items()}
        if isinstance(value, list):
            return [ints(v) for v in value]
        return value

    return ints(data)  # type: ignore[no-any-return]


def desired(rsp: fnv1.RunFunctionResponse) -> dict[str, dict[str, Any]]:
    """Desired composed resources by key."""
    return {key: to_dict(r.resource) for key, r in rsp.desired.resources.items()}


def readiness(rsp: fnv1.RunFunctionResponse) -> dict[str, str]:
    """Per-resource readiness flags by key, as enum names."""
    return {key: fnv1.Ready.Name(r.ready) for key, r in rsp.desired.resources.items()}


def conditions(rsp: fnv1.RunFunctionResponse) -> list[tuple[str, str, str, str]]:
    """(type, status, reason, message) of each condition."""
    names = {
        fnv1.STATUS_CONDITION_TRUE: "True",
        fnv1.STATUS_CONDITION_FALSE: "False",
        fnv1.STATUS_CONDITION_UNKNOWN: "Unknown",
    }
    return [(c.type, names[c.status], c.reason, c.message) for c in rsp.conditions]


def results(rsp: fnv1.RunFunctionResponse) -> list[tuple[str, str]]:
    """(severity, message) of each result."""
    return [
        (fnv1.Severity.Name(r.severity).removeprefix("SEVERITY_"), r.message) for r in rsp.results
    ]


def fatal_messages(rsp: fnv1.RunFunctionResponse) -> list[str]:
    """The messages of Fatal results."""
    return [m for s, m in results(rsp) if s == "FATAL"]


def requirements(rsp: fnv1.RunFunctionResponse) -> dict[str, dict[str, Any]]:
    """Declared resource requirements by key, as JSON data."""
    return {
        key: json_format.MessageToDict(sel, preserving_proto_field_name=True)
        for key, sel in rsp.requirements.resources.items()
    }


def satisfy(
    rsp: fnv1.RunFunctionResponse, world: Sequence[Mapping[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """What Crossplane would fetch for a response's requirements from ``world``."""
    fetched: dict[str, list[dict[str, Any]]] = {}
    for key, sel in rsp.requirements.resources.items():
        items = []
        for obj in world:
            meta = obj.get("metadata", {})
            if obj.get("apiVersion") != sel.api_version or obj.get("kind") != sel.kind:
                continue
            if sel.HasField("namespace") and meta.get("namespace") != sel.namespace:
                continue
            if sel.WhichOneof("match") == "match_name" and meta.get("name") != sel.match_name:
                continue
            if sel.WhichOneof("match") == "match_labels":
                labels = meta.get("labels", {})
                if any(labels.get(k) != v for k, v in sel.match_labels.labels.items()):
                    continue
            items.append(copy.deepcopy(dict(obj)))
        fetched[key] = items
    return fetched


def composite_status(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    """The desired status of the composite."""
    return to_dict(rsp.desired.composite.resource).get("status", {})  # type: ignore[no-any-return]


def composite_ready(rsp: fnv1.RunFunctionResponse) -> str:
    """The composite's readiness flag as an enum name."""
    return fnv1.Ready.Name(rsp.desired.composite.ready)


PC = PROVIDER_CONFIG


def replica(
    name: str = "qwen3-8b-e7f0a",
    namespace: str = "ml-team",
    cluster: str = "us-east-1",
    index: int = 0,
    deployment_name: str = "qwen3-8b",
    ready: bool | None = None,
) -> dict[str, Any]:
    """The seed's ModelReplica (docs/composition.md, "Examples") as Crossplane observes it."""
    obj: dict[str, Any] = {
        "apiVersion": GV,
        "kind": "ModelReplica",
        "metadata": server_metadata(
            name,
            namespace,
            labels=replica_labels(deployment_name, namespace, cluster, index),
            annotations={"crossplane.io/composition-resource-name": f"replica-{cluster}-{index}"},
        ),
        "spec": {
            "clusterName": cluster,
            "engines": [seed_replica_engine()],
            "crossplane": {"compositionRef": {"name": "modelreplicas.modelplane.ai"}},
        },
    }
    if ready is not None:
        obj["status"] = {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "Available" if ready else "Creating",
                    "lastTransitionTime": "2025-01-15T09:00:00Z",
                }
            ]
        }
    return obj


def stamped(replica_obj: Mapping[str, Any], cluster: Mapping[str, Any]) -> dict[str, Any]:
    """``replica_obj`` with ``spec.clusterInfo`` as its deployment stamps it from ``cluster``."""
    out = copy.deepcopy(dict(replica_obj))
    info = cluster_info(
        ModelReplica.model_validate(out), InferenceCluster.model_validate(dict(cluster))
    )
    out["spec"]["clusterInfo"] = info.to_wire()
    return out


def worked_example_cluster() -> dict[str, Any]:
    """Cluster us-east-1 of the worked example."""
    status = ready_status("us-east-1")
    status["providerConfigRef"] = {"kind": "ClusterProviderConfig", "name": PC}
    return existing_cluster("us-east-1", status=status)


def observed_object(
    desired_object: Mapping[str, Any], *, ready: bool, accepted: bool = True
) -> dict[str, Any]:
    """A composed Object as observed after the provider applied it (a Usage: after
    Crossplane's usage controller marked it, with no ``atProvider``)."""
    obj = copy.deepcopy(dict(desired_object))
    obj["metadata"]["uid"] = "uid-x"
    status: dict[str, Any] = {
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                "reason": "Available" if ready else "Creating",
            },
            {"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
        ]
    }
    if accepted and obj["kind"] == "Object":
        status["atProvider"] = {"manifest": obj["spec"]["forProvider"]["manifest"]}
    obj["status"] = status
    return obj


def free_port() -> int:
    """A loopback port free at the time of asking."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_argv(address: str, *extra: str) -> list[str]:
    """The command line of ``modelplane function serve --insecure`` on ``address``."""
    return [
        sys.executable,
        "-m",
        "modelplane",
        "function",
        "serve",
        "--insecure",
        "--address",
        address,
        *extra,
    ]


def serve_env() -> dict[str, str]:
    """The environment of a served function process: this checkout's code, no TLS directory."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    env.pop("TLS_SERVER_CERTS_DIR", None)
    return env
