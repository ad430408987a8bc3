"""A load model of the control plane at fleet scale (docs/scale.md).

Not a measurement of a live cluster: a steady-state model of Crossplane v2.3.4's reconcile
loop over a generated fleet, fed with what this project really composes. From
``modelplane render examples/`` it takes the provider-kubernetes Objects each replica and
cache composes and their sizes; from the real function (``run_bytes``) the size of a
replica's answer; from ``freshness`` the TTL of each kind's answer in the state the
steady fleet puts it in (a stamped replica, a settled deployment, a quiet cluster) and
its calls per reconcile. It prints, before (60 s TTL everywhere, two calls per
requirements loop) and after: XR reconciles/s, RunFunction calls/s, applies/s, managed
resources, estimated etcd bytes (observed Objects with their managedFields) and provider
reconciles/s, and the largest answer; then, at the larger fleet, where the reconciles,
calls and applies go by kind. The model's assumptions are printed with the figures.

Run: .venv/bin/python benchmarks/bench_control_plane.py
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modelplane.runtime.crossplane.server import CROSSPLANE_RECEIVE_LIMIT

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import crossplane.function.proto.v1.run_function_pb2 as fnv1  # noqa: E402
from builders import front_door_cluster, inference_gateway  # noqa: E402
from runtime.helpers import (  # noqa: E402
    deployment,
    direct,
    inference_class,
    model_cache,
    observed_object,
    ready_cluster,
    replica,
    request,
    satisfy,
    stamped,
    to_dict,
)

from modelplane.api import (  # noqa: E402
    InferenceCluster,
    InferenceGateway,
    ModelEndpoint,
    ModelService,
)
from modelplane.cli.main import main  # noqa: E402
from modelplane.composition.delivery import RESOURCE_NAME_ANNOTATION as RESOURCE_KEY  # noqa: E402
from modelplane.reconcile.endpoint import reconcile_endpoint  # noqa: E402
from modelplane.reconcile.service import reconcile_service  # noqa: E402
from modelplane.runtime.crossplane.freshness import SHORT_TTL, State, ttl_for  # noqa: E402
from modelplane.runtime.crossplane.server import run_bytes  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SYNC_INTERVAL_S = 3600.0  # crossplane --sync-interval default, v2.3.4 cmd/crossplane/core/core.go
PROVIDER_POLL_S = 600.0  # provider-kubernetes --poll default, v1.2.1 cmd/provider/main.go
# crossplane --poll-interval default (v2.3.4 cmd/crossplane/core/core.go): the usage controller
# requeues every Usage after it (internal/controller/protection/usage/reconciler.go) and reads
# the used and the using object with the manager's uncached client: two API GETs each.
USAGE_POLL_S = 60.0
USAGE_GETS = 2
RECEIVE_LIMIT = CROSSPLANE_RECEIVE_LIMIT  # what Crossplane receives from a function
REPLICAS_PER_DEPLOYMENT = 100
SYSTEM_NAMESPACE = "modelplane-system"  # where render prints a cluster's shared Objects


def fields_v1(value: Any) -> Any:
    """The managedFields ``fieldsV1`` set of a value: every field path, as the API server
    records it for an apply."""
    if isinstance(value, dict):
        return {f"f:{k}": fields_v1(v) for k, v in value.items()}
    if isinstance(value, list):
        return {f'k:{{"i":{i}}}': fields_v1(v) for i, v in enumerate(value)}
    return {}


def observed_object_bytes(desired: dict[str, Any]) -> int:
    """An Object as etcd holds it: the desired spec, Crossplane's and the provider's
    managedFields, and ``status.atProvider.manifest``, the remote object with its own
    managedFields and a typical status."""
    manifest = desired["spec"]["forProvider"]["manifest"]
    remote = json.loads(json.dumps(manifest))
    remote.setdefault("metadata", {})
    remote["metadata"].update(
        {
            "uid": "0" * 36,
            "resourceVersion": "123456789",
            "creationTimestamp": "2025-01-01T00:00:00Z",
        }
    )
    remote["metadata"]["managedFields"] = [
        {"manager": "provider-kubernetes", "operation": "Apply", "fieldsType": "FieldsV1",
         "fieldsV1": fields_v1(manifest)}
    ]  # fmt: skip
    remote["status"] = {"conditions": [{"type": "Available", "status": "True"}] * 2}
    observed = json.loads(json.dumps(desired))
    observed["metadata"].update({"uid": "0" * 36, "resourceVersion": "123456789"})
    observed["metadata"]["managedFields"] = [
        {"manager": "apiextensions.crossplane.io/composed", "operation": "Apply",
         "fieldsType": "FieldsV1", "fieldsV1": fields_v1(desired["spec"])},
        {"manager": "provider-kubernetes", "operation": "Update", "subresource": "status",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:atProvider": {}}}},
    ]  # fmt: skip
    observed["status"] = {
        "atProvider": {"manifest": remote},
        "conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "True"}],
    }
    return len(json.dumps(observed, separators=(",", ":")))


@dataclass(frozen=True)
class Composed:
    """What render composes, from examples/."""

    objects_per_replica: float
    shared_objects_per_cluster: int  # the pickers' ServiceAccount, RBAC and default config
    # Its provider configs, serving stack (Releases, our Objects) and the Usages ordering its
    # teardown, on average over the example clusters (docs/stack.md).
    stack_objects_per_cluster: float
    stack_usages_per_cluster: float
    object_bytes: float  # mean etcd bytes of one observed Object
    cache_objects_per_cluster: int
    cache_object_bytes: float
    replica_answer_bytes: int
    # What a ModelService over one deployment's replicas delivers to its gateway's cluster
    # (docs/crossplane.md, "The inference gateway"): Objects, each a managed resource.
    objects_per_service: int


def service_objects(endpoints: int) -> int:
    """The Objects the real service reconcile composes for ``endpoints`` ready replica
    endpoints on one gateway (the route names at most its backend bound)."""
    labels = {"modelplane.ai/deployment": "model"}
    published = []
    for i in range(endpoints):
        e = ModelEndpoint.model_validate(
            {
                "metadata": {"name": f"model-{i:03d}", "namespace": "team", "labels": labels},
                "spec": {"origin": f"http://10.0.{i // 250}.{i % 250 + 1}:8000", "model": "m"},
            }
        )
        published.append(e.model_copy(update={"status": reconcile_endpoint(e).status}))
    service = ModelService.model_validate(
        {
            "metadata": {"name": "model", "namespace": "team"},
            "spec": {"endpoints": [{"selector": {"matchLabels": labels}}]},
        }
    )
    gateway = InferenceGateway.model_validate(inference_gateway(address="192.0.2.1"))
    clusters = {"frontdoor": InferenceCluster.model_validate(front_door_cluster())}
    return len(reconcile_service(service, published, [gateway], clusters, None, {}).objects)


def rendered() -> list[dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["render", "-o", "json", str(REPO / "examples")])
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def measure() -> Composed:
    docs = rendered()
    replicas = [d for d in docs if d["kind"] == "ModelReplica"]
    objects = [d for d in docs if d["kind"] == "Object"]
    names = tuple(f"{r['metadata']['name']}-" for r in replicas)
    # A replica's Objects are named after it; the rest are the cache's, per cluster.
    ours = [o for o in objects if o["metadata"]["name"].startswith(names)]
    # A cluster composes once, in the system namespace, what every replica on it shares
    # (the pickers' objects), beside its serving stack.
    system = [o for o in objects if o["metadata"]["namespace"] == SYSTEM_NAMESPACE]
    shared = [
        o
        for o in system
        if o["metadata"].get("annotations", {}).get(RESOURCE_KEY, "").startswith("epp-")
    ]
    shared_clusters = {o["spec"]["providerConfigRef"]["name"] for o in shared}
    cache = [o for o in objects if not o["metadata"]["name"].startswith(names) and o not in system]
    cache_clusters = max(
        1,
        sum(
            1
            for o in cache
            if o["metadata"]["name"].endswith(
                tuple(f"-pvc-{suffix}" for suffix in [o["metadata"]["name"].rsplit("-", 1)[-1]])
            )
        ),
    )
    # render prints no InferenceCluster (it is input) but one kubernetes provider config each.
    clusters = max(
        1,
        sum(
            1
            for d in docs
            if d["kind"] == "ClusterProviderConfig" and d["apiVersion"].startswith("kubernetes.")
        ),
    )
    stack = [
        d
        for d in docs
        if d["kind"] in ("Release", "ClusterProviderConfig")
        or (d["kind"] in ("Object", "Usage") and d["metadata"].get("namespace") == SYSTEM_NAMESPACE)
    ]
    stack = [d for d in stack if d not in shared]
    sizes = [observed_object_bytes(o) for o in ours]
    cache_sizes = [observed_object_bytes(o) for o in cache] or [0]
    # A replica as its deployment writes it: stamped, so it is answered from its spec alone.
    answer = run_bytes(request(stamped(replica(), ready_cluster("us-east-1"))).SerializeToString())
    return Composed(
        objects_per_replica=len(ours) / max(1, len(replicas)),
        shared_objects_per_cluster=round(len(shared) / max(1, len(shared_clusters))),
        stack_objects_per_cluster=len(stack) / clusters,
        stack_usages_per_cluster=sum(1 for d in stack if d["kind"] == "Usage") / clusters,
        object_bytes=sum(sizes) / max(1, len(sizes)),
        cache_objects_per_cluster=round(len(cache) / cache_clusters),
        cache_object_bytes=sum(cache_sizes) / len(cache_sizes),
        replica_answer_bytes=len(answer),
        objects_per_service=service_objects(REPLICAS_PER_DEPLOYMENT),
    )


def answer(xr: dict[str, Any], world: list[dict[str, Any]], **kw: Any) -> fnv1.RunFunctionResponse:
    """The real answer to the call with every requirement satisfied from ``world``."""
    first = direct(request(xr, **kw))
    data = run_bytes(request(xr, required=satisfy(first, world), **kw).SerializeToString())
    return fnv1.RunFunctionResponse.FromString(data)


def applied(rsp: fnv1.RunFunctionResponse) -> dict[str, dict[str, Any]]:
    """Every composed Object of an answer observed applied, its remote object with a UID
    (and every Usage observed)."""
    out = {}
    for key, composed in rsp.desired.resources.items():
        obj = observed_object(to_dict(composed.resource), ready=True)
        if "atProvider" in obj["status"]:
            obj["status"]["atProvider"]["manifest"]["metadata"]["uid"] = "0" * 36
        out[key] = obj
    return out


@dataclass(frozen=True)
class Answers:
    """Real answer bytes over a fleet of ``clusters`` clusters."""

    cache: int  # a cache matching every cluster, its staging clusters started (Jobs composed)
    cache_per_staging_cluster: int  # what one staging cluster adds (PVC, owner, Job)
    deployment: int  # a deployment of the most replicas (100)


def answers(clusters: int) -> Answers:
    world = []
    for i in range(clusters):
        cluster = ready_cluster(f"cluster-{i:04d}")
        cluster["spec"]["cluster"]["existing"]["cache"] = {"storageClassName": "rwx"}
        world.append(cluster)
    xr = model_cache()
    fresh = answer(xr, world)
    staged = answer(xr, world, observed=applied(fresh))
    first = world[0]["metadata"]["name"]
    per_cluster = sum(
        len(r.SerializeToString())
        for key, r in staged.desired.resources.items()
        if key.endswith(f"-{first}")
    )
    fanned = answer(deployment(replicas=REPLICAS_PER_DEPLOYMENT), [*world, inference_class()])
    return Answers(
        cache=max(fresh.ByteSize(), staged.ByteSize()),
        cache_per_staging_cluster=per_cluster,
        deployment=fanned.ByteSize(),
    )


@dataclass(frozen=True)
class KindLoad:
    kind: str
    count: int
    ttl_s: float
    calls: int  # RunFunction calls per reconcile
    composed: float  # composed resources applied per reconcile
    informers: int  # resyncs per sync interval: its own informer + composed kinds'


# The state of each kind's answer in the steady state the model counts (nothing changes):
# every replica stamped by its deployment, every deployment settled, every cluster quiet.
STEADY: dict[str, State] = {
    "ModelDeployment": State.SETTLED,
    "ModelReplica": State.STAMPED,
    "InferenceCluster": State.QUIET,
}


def fleet(replicas: int, clusters: int, after: bool, composed: Composed) -> list[KindLoad]:
    deployments = max(1, replicas // REPLICAS_PER_DEPLOYMENT)

    def ttl(kind: str) -> float:
        state = STEADY.get(kind, State.DEFAULT)
        return (ttl_for(kind, state) if after else SHORT_TTL).total_seconds()

    def calls(after_calls: int, before_calls: int) -> int:
        return after_calls if after else before_calls

    per = REPLICAS_PER_DEPLOYMENT
    # A deployment applies per replica its ModelReplica, its Usage and its ModelEndpoint.
    # A stamped replica requires nothing: one call. A cluster requires its replicas by label,
    # which no Composition can fetch ahead: two.
    return [
        KindLoad("ModelDeployment", deployments, ttl("ModelDeployment"), calls(1, 2), 3 * per, 3),
        KindLoad("ModelReplica", replicas, ttl("ModelReplica"), calls(1, 2),
                 composed.objects_per_replica, 2),
        # Before, an endpoint composed its Backend and AIServiceBackend on the control plane;
        # now it composes nothing and its services deliver them to the gateway's cluster.
        KindLoad("ModelEndpoint", replicas, ttl("ModelEndpoint"), 1, 0 if after else 2,
                 1 if after else 3),
        KindLoad("InferenceCluster", clusters, ttl("InferenceCluster"), 2,
                 composed.stack_objects_per_cluster + composed.shared_objects_per_cluster, 2),
        KindLoad("ModelService", deployments, ttl("ModelService"), 2,
                 composed.objects_per_service if after else 1, 2),
    ]  # fmt: skip


def rates(kinds: list[KindLoad]) -> dict[str, float]:
    """XR reconciles/s of each kind: its TTL and its informers' resyncs."""
    return {k.kind: k.count * (1 / k.ttl_s + k.informers / SYNC_INTERVAL_S) for k in kinds}


def breakdown(
    replicas: int, clusters: int, after: bool, composed: Composed
) -> list[tuple[str, float, float, float]]:
    """(kind, XR reconciles/s, RunFunction calls/s, applies/s) of each kind."""
    kinds = fleet(replicas, clusters, after, composed)
    rate = rates(kinds)
    return [
        (k.kind, rate[k.kind], rate[k.kind] * k.calls, rate[k.kind] * k.composed) for k in kinds
    ]


def figures(
    replicas: int, clusters: int, after: bool, composed: Composed, real: Answers
) -> dict[str, float]:
    kinds = fleet(replicas, clusters, after, composed)
    rate = rates(kinds)
    per_cluster = composed.stack_objects_per_cluster + composed.shared_objects_per_cluster
    # Usages are applied like the rest, but no provider manages or polls them.
    managed = replicas * composed.objects_per_replica + clusters * (
        per_cluster - composed.stack_usages_per_cluster
    )
    if after:  # a service's route, backends and Namespace, as Objects on its gateway's cluster
        managed += max(1, replicas // REPLICAS_PER_DEPLOYMENT) * composed.objects_per_service
    usages = replicas + clusters * composed.stack_usages_per_cluster
    # The largest answers, measured from the real function: a deployment of 100 replicas,
    # and a cache matching every cluster. Before staging waves, every cluster of a cache
    # staged at once: its answer held every cluster's PVC, owner and Job.
    cache_answer = real.cache if after else clusters * real.cache_per_staging_cluster
    return {
        "XR reconciles/s": sum(rate.values()),
        "RunFunction calls/s": sum(rate[k.kind] * k.calls for k in kinds),
        "applies/s": sum(rate[k.kind] * k.composed for k in kinds),
        "managed resources": managed,
        "etcd bytes (Objects)": managed * composed.object_bytes,
        "provider reconciles/s": managed / PROVIDER_POLL_S,
        # One Usage per replica (the model stages no cache) and a cluster's stack Usages, each
        # polled by Crossplane.
        "Usage reconciles/s": usages / USAGE_POLL_S,
        "  their API GETs/s": USAGE_GETS * usages / USAGE_POLL_S,
        "largest answer bytes": max(real.deployment, cache_answer),
    }


def main_() -> None:
    composed = measure()
    print("Assumptions (the model, not a live cluster):")
    print(f"  {composed.objects_per_replica:.1f} Objects per replica, "
          f"{composed.object_bytes:,.0f} etcd bytes each as observed (render examples/)")  # fmt: skip
    print(f"  {composed.shared_objects_per_cluster} Objects per cluster shared by its replicas "
          "(the pickers' ServiceAccount, RBAC and default config)")  # fmt: skip
    print(f"  a cache stages {composed.cache_objects_per_cluster} Objects per cluster, "
          f"{composed.cache_object_bytes:,.0f} bytes each observed (~half that in an answer)")  # fmt: skip
    print(f"  a replica's real answer: {composed.replica_answer_bytes:,} bytes")
    print(f"  {REPLICAS_PER_DEPLOYMENT} replicas per deployment, one ModelService per deployment,")
    print(f"  {composed.stack_objects_per_cluster:.1f} objects per cluster for its provider configs "
          f"and serving stack, {composed.stack_usages_per_cluster:.1f} of them Usages")  # fmt: skip
    print("  one ModelEndpoint and one Usage per replica; after: a ModelService delivers "
          f"{composed.objects_per_service} Objects to one gateway's cluster; realtime")  # fmt: skip
    print("  compositions on, Usages polled every 1 min (2 uncached GETs each),")
    print("  steady state: nothing changes, so a watch fires only on the 1 h informer resync")
    print("  (XR informer + each composed kind's); Crossplane applies every composed resource")
    print("  on every reconcile; provider-kubernetes polls every Object every 10 min.")
    print("  before: 60 s TTL for every kind, 2 calls per loop for every kind that requires;")
    print("  after: each answer's TTL by kind and state (freshness.READS) in the steady state:")
    print("  replicas stamped by their deployment (1 h, 1 call), deployments settled (5 min),")
    print("  clusters quiet (10 min); 1 call where only static requirements.")
    print("  largest answer: the real function's, for a deployment of 100 replicas and a cache")
    print("  matching every cluster with its staging clusters started; before: every cluster")
    print("  of the cache staging at once (its PVC, owner and Job each).")
    for replicas, clusters in [(2000, 100), (20000, 1000)]:
        real = answers(clusters)
        before = figures(replicas, clusters, False, composed, real)
        after = figures(replicas, clusters, True, composed, real)
        print(f"\n{replicas:,} replicas over {clusters:,} clusters")
        print(f"  {'figure':42} {'before':>16} {'after':>16}")
        for name in before:
            b, a = before[name], after[name]
            print(f"  {name:42} {b:16,.1f} {a:16,.1f}")
        over = {
            name: "YES" if figs["largest answer bytes"] > RECEIVE_LIMIT else "no"
            for name, figs in [("before", before), ("after", after)]
        }
        print(
            "  largest answer over Crossplane's 4 MiB receive limit: "
            f"before {over['before']}, after {over['after']}"
        )
    replicas, clusters = 20000, 1000
    print(f"\nBy kind at {replicas:,} replicas over {clusters:,} clusters, before -> after:")
    print(f"  {'kind':18} {'XR reconciles/s':>22} {'RunFunction calls/s':>22} {'applies/s':>22}")
    pairs = zip(
        breakdown(replicas, clusters, False, composed),
        breakdown(replicas, clusters, True, composed),
        strict=True,
    )
    for (kind, r0, c0, a0), (_, r1, c1, a1) in pairs:
        print(
            f"  {kind:18} {r0:10,.1f} -> {r1:8,.1f} {c0:10,.1f} -> {c1:8,.1f}"
            f" {a0:10,.1f} -> {a1:8,.1f}"
        )
    # The cluster count at which a cache's answer crossed the limit before waves.
    crossing = RECEIVE_LIMIT // real.cache_per_staging_cluster + 1
    print(f"\nBefore staging waves, a cache's answer crossed 4 MiB at {crossing:,} clusters.")


if __name__ == "__main__":
    main_()
