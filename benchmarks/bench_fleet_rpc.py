"""RunFunction at fleet scale over loopback gRPC: prints figures, asserts nothing.

The fleet: 1,000 InferenceClusters x 4 pools, 20,000 ModelReplicas over 200 ModelDeployments
in 20 namespaces (100 replicas each). One deployment (``dep-000`` in ``team-00``) is
reconciled the way Crossplane reconciles it: the function is called, its requirements are
answered from the fleet as Crossplane answers them (kind, namespace, name, labels), and it is
called again until its requirements settle; its replicas are then observed Ready with the
server's metadata (uid, resourceVersion). The server is ``modelplane function serve`` in its
own process (with its workers), so its peak RSS (``VmHWM``) is the server's alone.

Every object is sent as Crossplane sends it (``--plain``: without what follows): with the
``managedFields`` of its writers, the last-applied configuration kubectl writes, and the
conditions Crossplane adds, none of which the function reads.

Printed per mode: p50 and p99 of one call in steady state (the same request again, what
Crossplane sends between changes) and after another deployment's replica changed (a fresh
change before every call), the request's bytes, the server processes' summed peak RSS and
their mean CPU time per call (wall-clock percentiles on a busy machine measure the
machine), and the runtime memos' entries and hit counts.

Modes (``--mode``, default both):

* ``today``: what the function requires today is answered as it asks, every ModelReplica of
  every namespace included (``all-replicas``); a change is one other replica's new status and
  resourceVersion.
* ``occupancy``: every cluster carries the ``status.occupancy`` its InferenceCluster
  function publishes (computed by the core's ``published_occupancy``); a change is one
  cluster's new occupancy (another free count on its first node run, still valid for its
  pools) and resourceVersion: the cluster function republished after a replica of another
  deployment changed. While a deployment function still asks for ``all-replicas``, that key
  is answered with no items and the mode is marked *projected*.

Targets: p99 <= 100 ms steady, <= 250 ms after a change, request <= 4 MiB,
server RSS <= 1 GiB. Runs in about two minutes on two cores, most of it today's calls of
several seconds each (``--quick``: fewer calls; ``--mode occupancy``: about 30 s).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import grpc
from google.protobuf import json_format, struct_pb2

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_scheduler import GPU_SEL, KINDS, cluster_doc  # noqa: E402 - after the path is set

from modelplane.api import ModelReplica  # noqa: E402
from modelplane.api.inferencecluster import GpuPool  # noqa: E402
from modelplane.scheduling.occupancy import published_occupancy  # noqa: E402

GV = "modelplane.ai/v1alpha1"
CLUSTERS = 1000
DEPLOYMENTS = 200
NAMESPACES = 20
PER_DEPLOYMENT = 100
ALL_REPLICAS = "all-replicas"  # today's requirement key (runtime/crossplane/requirements.py)
METHOD = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction"
MAX_BYTES = 64 * 1024 * 1024

TARGETS = {"steady_p99_ms": 100.0, "change_p99_ms": 250.0, "request_mib": 4.0, "rss_mib": 1024.0}
POOL_DEVICES = {name: count for name, _, count in KINDS}


def meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    """ObjectMeta as the API server returns it."""
    out: dict[str, Any] = {
        "name": name,
        "uid": f"uid-{namespace or ''}-{name}",
        "resourceVersion": "1000",
        "generation": 1,
        "creationTimestamp": "2026-01-15T09:00:00Z",
    }
    if namespace is not None:
        out["namespace"] = namespace
    out.update(extra)
    return out


def ready_status() -> dict[str, Any]:
    """A composed resource's status once it is up."""
    return {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Available",
                "lastTransitionTime": "2026-01-15T09:00:00Z",
            }
        ]
    }


def deployment_of(index: int) -> tuple[str, str]:
    """(name, namespace) of deployment ``index``: ten per namespace."""
    return f"dep-{index:03d}", f"team-{index % NAMESPACES:02d}"


def measured_deployment() -> dict[str, Any]:
    """The reconciled deployment: one Standalone engine asking for one GPU of 20Gi or more."""
    name, namespace = deployment_of(0)
    member = {
        "nodeSelector": {"devices": [{"name": "gpu", "selectors": [{"cel": GPU_SEL}]}]},
        "template": {"spec": {"containers": [{"name": "engine", "image": "vllm"}]}},
    }
    return {
        "apiVersion": GV,
        "kind": "ModelDeployment",
        "metadata": meta(name, namespace),
        "spec": {
            "replicas": PER_DEPLOYMENT,
            "template": {"spec": {"engines": [{"name": "engine", "members": [member]}]}},
            "crossplane": {"compositionRef": {"name": "modeldeployments.modelplane.ai"}},
        },
    }


def other_replica(i: int) -> dict[str, Any]:
    """Replica ``i`` of the other 199 deployments: one GPU on some pool of some cluster."""
    dep = 1 + i // PER_DEPLOYMENT
    name, namespace = deployment_of(dep)
    index = i % PER_DEPLOYMENT
    pool = KINDS[i % 4][0]
    cluster = f"cluster-{(i * 7919) % CLUSTERS:04d}"
    labels = {
        "modelplane.ai/deployment": name,
        "modelplane.ai/deployment-namespace": namespace,
        "modelplane.ai/cluster": cluster,
        "modelplane.ai/replica-index": str(index),
    }
    request = {
        "name": "gpu",
        "deviceClassName": f"{pool}.nvidia.com",
        "count": 1,
        "selectors": [{"cel": GPU_SEL}],
    }
    member = {
        "role": "Standalone",
        "nodePoolName": pool,
        "deviceRequests": [request],
        "template": {"spec": {"containers": [{"name": "engine", "image": "vllm"}]}},
    }
    return {
        "apiVersion": GV,
        "kind": "ModelReplica",
        "metadata": meta(f"{name}-{cluster}-{index}", namespace, labels=labels),
        "spec": {
            "clusterName": cluster,
            "engines": [{"name": "engine", "copies": 1, "members": [member]}],
            "crossplane": {"compositionRef": {"name": "modelreplicas.modelplane.ai"}},
        },
        "status": ready_status(),
    }


def server_cluster(i: int) -> dict[str, Any]:
    """Cluster ``i`` of bench_scheduler's fleet, as the API server returns it."""
    doc = cluster_doc(i)
    doc["metadata"] = meta(doc["metadata"]["name"], labels=doc["metadata"]["labels"])
    return doc


# ---------------------------------------------------------------- what Crossplane sends

# Set by --plain: objects without the fields only the API server and kubectl write.
REALISTIC = True


def fields_v1(value: Any) -> Any:
    """The field set of ``value`` as server-side apply records it: ``f:`` keys, the items of
    a list keyed by ``name`` or ``type`` one by one, any other list as one atomic field."""
    if isinstance(value, Mapping):
        return {f"f:{k}": fields_v1(v) for k, v in value.items()}
    if isinstance(value, list) and all(
        isinstance(item, Mapping) and ("name" in item or "type" in item) for item in value
    ):
        out: dict[str, Any] = {}
        for item in value:
            key = "name" if "name" in item else "type"
            out[f'k:{{"{key}":"{item[key]}"}}'] = {".": {}, **fields_v1(item)}
        return out
    return {}


def as_sent(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as Crossplane sends it: the last-applied configuration, ``managedFields`` of
    the writer of its spec, of Crossplane and of the writer of its status, and status
    conditions as Crossplane writes them. Nothing of this is read by the function.
    """
    if not REALISTIC:
        return obj
    doc = copy.deepcopy(obj)
    md = doc["metadata"]
    applied = {k: v for k, v in doc.items() if k != "status"}
    applied["metadata"] = {k: md[k] for k in ("name", "namespace", "labels") if k in md}
    md.setdefault("annotations", {})[LAST_APPLIED] = json.dumps(applied, sort_keys=True)
    status = doc.setdefault("status", {})
    conditions = status.setdefault("conditions", [])
    for condition in conditions:
        condition.setdefault("lastTransitionTime", "2026-01-15T09:00:00Z")
        condition.setdefault("observedGeneration", 1)
    if not any(c.get("type") == "Synced" for c in conditions):
        conditions.append(
            {
                "type": "Synced",
                "status": "True",
                "reason": "ReconcileSuccess",
                "lastTransitionTime": "2026-01-15T09:00:00Z",
                "observedGeneration": 1,
            }
        )
    md["managedFields"] = [
        managed("kubectl-client-side-apply", "Update", {"metadata": md, "spec": doc["spec"]}),
        managed("crossplane", "Apply", {"spec": {"crossplane": doc["spec"].get("crossplane", {})}}),
        managed("crossplane", "Update", {"status": status}, subresource="status"),
    ]
    return doc


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def managed(manager: str, operation: str, fields: Any, **extra: str) -> dict[str, Any]:
    """One ``managedFields`` entry."""
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": GV,
        "time": "2026-01-15T09:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1(fields),
        **extra,
    }


# ---------------------------------------------------------------- occupancy


def with_occupancy(
    clusters: list[dict[str, Any]], replicas: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Every cluster with the ``status.occupancy`` its InferenceCluster function publishes.

    The core's own computation (``scheduling.occupancy.published_occupancy``), so the
    deployment function reads what it would read on Crossplane.
    """
    pinned: dict[str, list[ModelReplica]] = {}
    for replica in replicas:
        pinned.setdefault(replica["spec"]["clusterName"], []).append(_typed(replica))
    out = []
    for cluster in clusters:
        doc = copy.deepcopy(cluster)
        pools = [GpuPool.model_validate(p) for p in doc["status"]["gpuPools"]]
        name = doc["metadata"]["name"]
        doc["status"]["occupancy"] = published_occupancy(
            name, pools, pinned.get(name, [])
        ).to_wire()
        out.append(doc)
    return out


_TYPED: dict[int, tuple[Mapping[str, Any], ModelReplica]] = {}


def _typed(replica: Mapping[str, Any]) -> ModelReplica:
    """The replica as a model, converted once per document of the benchmark's fleet."""
    hit = _TYPED.get(id(replica))
    if hit is None or hit[0] is not replica:
        hit = _TYPED[id(replica)] = (replica, ModelReplica.model_validate(replica))
    return hit[1]


# ---------------------------------------------------------------- Crossplane's side


def as_struct(data: Mapping[str, Any]) -> struct_pb2.Struct:
    """A dict as a Struct, through JSON as Crossplane's Go side does (numbers become doubles)."""
    return json_format.ParseDict(data, struct_pb2.Struct())


def selected(selector: fnv1.ResourceSelector, world: Sequence[Mapping[str, Any]]) -> list[int]:
    """Indexes into ``world`` of what Crossplane fetches for one selector."""
    out = []
    match = selector.WhichOneof("match")
    for n, obj in enumerate(world):
        md = obj.get("metadata", {})
        if obj.get("apiVersion") != selector.api_version or obj.get("kind") != selector.kind:
            continue
        if selector.HasField("namespace") and md.get("namespace") != selector.namespace:
            continue
        if match == "match_name" and md.get("name") != selector.match_name:
            continue
        if match == "match_labels":
            labels = md.get("labels", {})
            if any(labels.get(k) != v for k, v in selector.match_labels.labels.items()):
                continue
        out.append(n)
    return out


@dataclass
class Call:
    """One request as Crossplane builds it, kept as a message so one object can change."""

    message: fnv1.RunFunctionRequest
    # requirement key -> indexes into the world of the items under it, in order
    fetched: dict[str, list[int]]


def build_request(
    composite: Mapping[str, Any],
    observed: Mapping[str, Mapping[str, Any]],
    requirements: Mapping[str, fnv1.ResourceSelector] | None,
    world: Sequence[Mapping[str, Any]],
    unanswered: frozenset[str] = frozenset(),
) -> Call:
    """The request: the composite, observed resources, and the requirements answered."""
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="bench"))
    req.observed.composite.resource.CopyFrom(as_struct(composite))
    for key, obj in observed.items():
        req.observed.resources[key].resource.CopyFrom(as_struct(obj))
    fetched: dict[str, list[int]] = {}
    structs: dict[int, struct_pb2.Struct] = {}
    for key, selector in (requirements or {}).items():
        indexes = [] if key in unanswered else selected(selector, world)
        fetched[key] = indexes
        resources = req.required_resources[key]
        resources.SetInParent()
        for n in indexes:
            if n not in structs:
                structs[n] = as_struct(world[n])
            resources.items.add().resource.CopyFrom(structs[n])
    return Call(req, fetched)


def run_bytes(call: Callable[..., bytes], data: bytes) -> fnv1.RunFunctionResponse:
    """One call; Fatal results fail the benchmark (a figure of a failing call means nothing)."""
    rsp = fnv1.RunFunctionResponse.FromString(call(data))
    fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
    if fatal:
        raise SystemExit(f"the function returned a Fatal result: {fatal[0]}")
    return rsp


def observed_ready(rsp: fnv1.RunFunctionResponse) -> dict[str, dict[str, Any]]:
    """The desired replicas as observed once created and Ready (server metadata added)."""
    out = {}
    for key, resource in rsp.desired.resources.items():
        obj = json_format.MessageToDict(resource.resource)
        md = obj["metadata"]
        md.update(meta(md["name"], md.get("namespace"), labels=md.get("labels", {})))
        obj["status"] = ready_status()
        out[key] = as_sent(obj)
    return out


def settle(
    call: Callable[..., bytes],
    composite: Mapping[str, Any],
    observed: Mapping[str, Mapping[str, Any]],
    world: Sequence[Mapping[str, Any]],
    unanswered: frozenset[str],
) -> tuple[Call, fnv1.RunFunctionResponse]:
    """Call until the requirements stop changing (Crossplane's loop); the last request."""
    requirements: dict[str, fnv1.ResourceSelector] | None = None
    for _ in range(5):
        built = build_request(composite, observed, requirements, world, unanswered)
        rsp = run_bytes(call, built.message.SerializeToString())
        asked = dict(rsp.requirements.resources)
        if requirements is not None and asked == requirements:
            return built, rsp
        requirements = asked
    raise SystemExit("the function's requirements did not settle")


# ---------------------------------------------------------------- the server


class Server:
    """``modelplane function serve --insecure`` in its own process, with metrics."""

    def __init__(self) -> None:
        port, metrics = free_port(), free_port()
        self.metrics = f"http://127.0.0.1:{metrics}/metrics"
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
        env.pop("TLS_SERVER_CERTS_DIR", None)
        argv = [sys.executable, "-m", "modelplane", "function", "serve", "--insecure"]
        argv += ["--address", f"127.0.0.1:{port}", "--metrics-address", f"127.0.0.1:{metrics}"]
        self.process = subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL)
        self.channel = grpc.insecure_channel(
            f"127.0.0.1:{port}",
            options=[
                ("grpc.max_send_message_length", MAX_BYTES),
                ("grpc.max_receive_message_length", MAX_BYTES),
            ],
        )
        grpc.channel_ready_future(self.channel).result(timeout=30)
        self.call = self.channel.unary_unary(METHOD)  # bytes in, bytes out

    def processes(self) -> list[int]:
        """The serving process and its workers (``--workers``), by pid."""
        out, todo = [], [self.process.pid]
        while todo:
            pid = todo.pop()
            out.append(pid)
            children = Path(f"/proc/{pid}/task/{pid}/children")
            todo += [int(c) for c in children.read_text().split()] if children.exists() else []
        return out

    def peak_rss_mib(self) -> float:
        """The peak resident sets (VmHWM) of the server's processes, summed, MiB."""
        total = 0
        for pid in self.processes():
            status = Path(f"/proc/{pid}/status").read_text()
            found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
            total += int(found.group(1)) if found else 0
        return total / 1024

    def cpu_seconds(self) -> float:
        """The CPU time of the server's processes so far (user + system): unlike wall time,
        not inflated by other work on a busy machine."""
        total = 0
        for pid in self.processes():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def memos(self) -> dict[str, tuple[int, int, int]]:
        """(entries, hits, misses) of the runtime's memos, from /metrics."""
        text = urllib.request.urlopen(self.metrics, timeout=10).read().decode()  # noqa: S310
        out: dict[str, list[int]] = {}
        for metric, slot in (("entries", 0), ("hits_total", 1), ("misses_total", 2)):
            pattern = rf'^modelplane_memo_{metric}{{memo="(runtime\.[^"]+)"}} (\d+)'
            for name, value in re.findall(pattern, text, re.M):
                out.setdefault(name, [0, 0, 0])[slot] = int(value)
        return {name: (v[0], v[1], v[2]) for name, v in sorted(out.items())}

    def close(self) -> None:
        """Stop the server and wait for it."""
        self.channel.close()
        self.process.terminate()
        self.process.wait(timeout=30)


def free_port() -> int:
    """A loopback port free at the time of asking."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---------------------------------------------------------------- measuring


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(p50, p99) of ``samples`` (nearest rank)."""
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return statistics.median(ordered), p99


def timed(call: Callable[..., bytes], data: bytes) -> float:
    """Milliseconds of one round trip."""
    started = time.perf_counter()
    call(data)
    return (time.perf_counter() - started) * 1000


@dataclass
class Figures:
    """One mode's measurement."""

    mode: str
    steady: tuple[float, float]
    change: tuple[float, float]
    cold_own: tuple[float, float] | None
    request_bytes: int
    rss_mib: float
    calls: tuple[int, int]
    memos: dict[str, tuple[int, int, int]]
    projected: bool
    # The server's mean CPU milliseconds per call: steady, after a change, own cold.
    cpu_ms: tuple[float, float, float | None]


def measure(mode: str, steady_calls: int, change_calls: int) -> Figures | None:
    """Reconcile the measured deployment to steady state, then time calls.

    None for ``today`` when the function no longer requires every replica: there is no
    "today" left to measure (docs/crossplane.md keeps the figure).
    """
    clusters = [server_cluster(i) for i in range(CLUSTERS)]
    others = [other_replica(i) for i in range(DEPLOYMENTS * PER_DEPLOYMENT - PER_DEPLOYMENT)]
    composite = as_sent(measured_deployment())
    server = Server()
    try:
        unanswered = frozenset({ALL_REPLICAS}) if mode == "occupancy" else frozenset()
        observed: dict[str, dict[str, Any]] = {}
        for _ in range(4):
            # Observe what it asked for, Ready (replicas, then their endpoints), until the
            # desired state is what is observed: the steady state.
            replicas = [*others, *(v for k, v in observed.items() if k.startswith("replica-"))]
            world = [*clusters, *replicas]
            if mode == "occupancy":
                world = [*with_occupancy(clusters, replicas), *replicas]
            world = [as_sent(obj) for obj in world]
            steady, rsp = settle(server.call, composite, observed, world, unanswered)
            if mode == "today" and ALL_REPLICAS not in rsp.requirements.resources:
                # Without every replica and without occupancy nothing is placed: no steady state.
                print("today: the function no longer requires every replica; nothing to measure")
                return None
            if observed and set(rsp.desired.resources) == set(observed):
                break
            observed = observed_ready(rsp)
        else:
            raise SystemExit("not steady: the function keeps changing the deployment's resources")
        requires_all = ALL_REPLICAS in rsp.requirements.resources
        projected = mode == "occupancy" and requires_all
        data = steady.message.SerializeToString()
        for _ in range(3):
            server.call(data)  # warm the memos and the connection
        cpu = server.cpu_seconds()
        samples = [timed(server.call, data) for _ in range(steady_calls)]
        steady_cpu = (server.cpu_seconds() - cpu) * 1000 / steady_calls
        own = observed
        changes = [changed(steady, world, mode, n) for n in range(change_calls)]
        cpu = server.cpu_seconds()
        after = [timed(server.call, payload) for payload in changes]
        change_cpu = (server.cpu_seconds() - cpu) * 1000 / change_calls
        run_bytes(server.call, changes[-1])  # the last change still answers without Fatal
        cold_own, cold_cpu = None, None
        if mode == "occupancy":
            colds = [
                changed(steady, world, mode, change_calls + n, own) for n in range(change_calls)
            ]
            cpu = server.cpu_seconds()
            cold_own = percentiles([timed(server.call, payload) for payload in colds])
            cold_cpu = (server.cpu_seconds() - cpu) * 1000 / change_calls
        return Figures(
            mode,
            percentiles(samples),
            percentiles(after),
            cold_own,
            len(data),
            server.peak_rss_mib(),
            (steady_calls, change_calls),
            server.memos(),
            projected,
            (steady_cpu, change_cpu, cold_cpu),
        )
    finally:
        server.close()


def changed(
    steady: Call,
    world: Sequence[Mapping[str, Any]],
    mode: str,
    n: int,
    own: Mapping[str, Mapping[str, Any]] | None = None,
) -> bytes:
    """The steady request after change ``n``: objects of the fleet have a new version.

    ``today``: one other deployment's replica turned not Ready (its status and
    resourceVersion changed). ``occupancy``: that replica's cluster republished its
    occupancy with one more device free on the first node it charged, and another
    cluster's status was written (its Ready condition's transition time).

    With ``own`` (the observed objects), every one of them also has a new
    resourceVersion: what a server answering every deployment of the fleet sees after a
    change, since 200 deployments' own objects (40,000) exceed the 8,192 validated
    documents it remembers, so a deployment's own objects are validated afresh.
    """
    for key, obj in (own or {}).items():
        fresh = copy.deepcopy(dict(obj))
        fresh["metadata"]["resourceVersion"] = f"own-{n}"
        steady.message.observed.resources[key].resource.CopyFrom(as_struct(fresh))
    key = ALL_REPLICAS if mode == "today" else "clusters"
    items = steady.message.required_resources[key].items
    indexes = steady.fetched[key]
    slot = (n * 37) % len(indexes)
    obj = copy.deepcopy(world[indexes[slot]])
    obj["metadata"]["resourceVersion"] = str(2000 + n)
    if mode == "today":
        obj["status"]["conditions"][0].update(status="False", reason="Unavailable")
    else:
        pools = obj["status"]["occupancy"].get("pools")
        if pools:
            # Still a valid occupancy for the pool: the same nodes, another free count.
            first = pools[0]["nodes"][0]
            first["free"]["gpu"] = (first["free"]["gpu"] + 1 + n) % (
                POOL_DEVICES[pools[0]["name"]] + 1
            )
    items[slot].resource.CopyFrom(as_struct(obj))
    other = (slot + len(indexes) // 2) % len(indexes)
    if mode == "occupancy" and other != slot:
        # Another InferenceCluster's status was written too (its Ready condition again).
        status = copy.deepcopy(world[indexes[other]])
        status["metadata"]["resourceVersion"] = str(3000 + n)
        status["status"]["conditions"][0]["lastTransitionTime"] = f"2026-01-16T09:{n % 60:02d}:00Z"
        items[other].resource.CopyFrom(as_struct(status))
    try:
        return steady.message.SerializeToString()
    finally:
        items[slot].resource.CopyFrom(as_struct(world[indexes[slot]]))
        items[other].resource.CopyFrom(as_struct(world[indexes[other]]))
        for key, obj in (own or {}).items():
            steady.message.observed.resources[key].resource.CopyFrom(as_struct(obj))


def report(figures: list[Figures]) -> None:
    """The table, then the targets."""
    print(
        f"{'mode':>10} {'calls':>7} {'steady p50':>10} {'p99 ms':>8} "
        f"{'change p50':>10} {'p99 ms':>8} {'+own cold p50':>13} {'p99 ms':>8} "
        f"{'request MiB':>11} {'server RSS MiB':>14}"
    )
    for f in figures:
        mode = f.mode + ("*" if f.projected else "")
        cold = ("-", "-") if f.cold_own is None else tuple(f"{v:.1f}" for v in f.cold_own)
        print(
            f"{mode:>10} {f.calls[0]:>3}/{f.calls[1]:<3} {f.steady[0]:>10.1f} {f.steady[1]:>8.1f} "
            f"{f.change[0]:>10.1f} {f.change[1]:>8.1f} {cold[0]:>13} {cold[1]:>8} "
            f"{f.request_bytes / 2**20:>11.2f} {f.rss_mib:>14.0f}"
        )
    for f in figures:
        cold = "-" if f.cpu_ms[2] is None else f"{f.cpu_ms[2]:.1f}"
        print(
            f"  {f.mode} server CPU ms per call (mean): steady {f.cpu_ms[0]:.1f}, "
            f"after a change {f.cpu_ms[1]:.1f}, own cold {cold}"
        )
    for f in figures:
        memos = ", ".join(f"{k}={v[0]} ({v[1]} hits, {v[2]} misses)" for k, v in f.memos.items())
        print(f"  {f.mode} memos: {memos}")
    if any(f.projected for f in figures):
        print(
            "  * projected: the deployment function still requires every replica; "
            f"{ALL_REPLICAS} was answered with none"
        )
    for f in figures:
        met = {
            "steady_p99_ms": f.steady[1] <= TARGETS["steady_p99_ms"],
            "change_p99_ms": max(f.change[1], (f.cold_own or f.change)[1])
            <= TARGETS["change_p99_ms"],
            "request_mib": f.request_bytes / 2**20 <= TARGETS["request_mib"],
            "rss_mib": f.rss_mib <= TARGETS["rss_mib"],
        }
        said = ", ".join(
            f"{k} <= {TARGETS[k]:g}: {'met' if ok else 'MISSED'}" for k, ok in met.items()
        )
        print(f"  {f.mode} targets: {said}")


def main(argv: Sequence[str] | None = None) -> int:
    """Measure the modes asked for and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("today", "occupancy", "both"), default="both")
    parser.add_argument("--quick", action="store_true", help="fewer calls")
    parser.add_argument(
        "--plain",
        action="store_true",
        help="objects without managedFields, the last-applied configuration and the "
        "conditions Crossplane adds (the figures before requests were made realistic)",
    )
    args = parser.parse_args(argv)
    global REALISTIC  # noqa: PLW0603 - one switch for the whole run
    REALISTIC = not args.plain
    modes = ("today", "occupancy") if args.mode == "both" else (args.mode,)
    calls = {"today": (5, 3), "occupancy": (100, 30)}
    if args.quick:
        calls = {"today": (2, 2), "occupancy": (20, 10)}
    figures = [f for mode in modes if (f := measure(mode, *calls[mode])) is not None]
    report(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
