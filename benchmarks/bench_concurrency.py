"""RunFunction calls per second under concurrent load, by CPU count and worker count.

``modelplane function serve`` runs in its own process pinned to one core, then to two
(``os.sched_setaffinity`` before it starts, so every thread and forked worker inherits
it), and is driven over loopback by ``--clients`` concurrent callers for ``--seconds``
each. Printed per run: calls/s, p50 and p99 of one call.

The load is what Crossplane sends after the fleet changed: ``--deployments``
ModelDeployments of a few replicas each and as many ModelReplicas, over a fleet of
``--clusters`` InferenceClusters (bench_fleet_rpc's), every request answered as
Crossplane answers its requirements; each call carries another tag, so no answer is
remembered and each call runs the reconcile (the fleet's objects stay validated).

Models: ``threads-8`` is the server as it was, eight threads of one process (kept as
``ServeConfig.threads`` only for this comparison); ``workers-N`` is ``--workers N``;
the default on that many cores is marked. Each configuration runs ``--repeat`` times,
interleaved with the others (a shared machine's load drifts); the median run is printed
with every run's calls/s, and the server's CPU time per call (its own process and its
workers', so a slower run on a busy machine still shows what a call costs) and how many
cores it kept busy on average (CPU time over wall time: what the interpreter lock caps). Runs in
about a minute and a half.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_fleet_rpc import (  # noqa: E402 - after the path is set
    MAX_BYTES,
    METHOD,
    deployment_of,
    free_port,
    measured_deployment,
    other_replica,
    server_cluster,
    settle,
    with_occupancy,
)

from modelplane.runtime.crossplane.server import run_bytes  # noqa: E402
from modelplane.runtime.crossplane.workers import default_workers  # noqa: E402

REPLICAS = 4
# The server as it was: eight threads answering in one process.
THREADED = """
import sys
from modelplane.runtime.crossplane.server import ServeConfig, configure_logging, serve
configure_logging()
config = ServeConfig(address=sys.argv[1], insecure=True, threads=8)
sys.exit(serve(config))
"""


def deployment(index: int) -> dict[str, object]:
    """Deployment ``index`` of the fleet: bench_fleet_rpc's measured one, renamed."""
    doc = measured_deployment()
    name, namespace = deployment_of(index)
    doc["metadata"] = {**doc["metadata"], "name": name, "namespace": namespace}  # type: ignore[dict-item]
    doc["spec"] = {**doc["spec"], "replicas": REPLICAS}  # type: ignore[dict-item]
    return doc


def fleet(clusters: int, replicas: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The clusters (with the occupancy and provider config their function publishes) and
    ``replicas`` ModelReplicas of other deployments pinned to them."""
    pinned = []
    for i in range(replicas):
        doc = other_replica(i * 101)
        cluster = f"cluster-{i * 7 % clusters:04d}"
        doc["spec"]["clusterName"] = cluster
        doc["metadata"]["labels"]["modelplane.ai/cluster"] = cluster
        pinned.append(doc)
    docs = with_occupancy([server_cluster(i) for i in range(clusters)], pinned)
    for doc in docs:
        name = doc["metadata"]["name"]
        doc["status"]["providerConfigRef"] = {"kind": "ClusterProviderConfig", "name": f"{name}-kc"}
    return docs, pinned


def workload(deployments: int, clusters: int) -> list[bytes]:
    """One settled request per deployment and per replica, as Crossplane's last call sent it."""
    docs, pinned = fleet(clusters, deployments)
    world = [*docs, *pinned]
    composites = [deployment(i) for i in range(deployments)] + pinned
    out = []
    for composite in composites:
        call, rsp = settle(run_bytes, composite, {}, world, frozenset())
        fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
        if fatal or not rsp.desired.resources:
            raise SystemExit(f"the workload's requests do not compose: {fatal or rsp.results}")
        out.append(call.message.SerializeToString())
    return out


@dataclass
class Run:
    """One measured configuration."""

    cores: int
    model: str
    default: bool
    calls: int
    seconds: float
    cpu_seconds: float
    latencies_ms: list[float]

    @property
    def rate(self) -> float:
        """Calls answered per second."""
        return self.calls / self.seconds


def start(model: str, cores: Sequence[int]) -> tuple[subprocess.Popen[bytes], str]:
    """The server of ``model`` pinned to ``cores``, and its address once it answers."""
    address = f"127.0.0.1:{free_port()}"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    env.pop("TLS_SERVER_CERTS_DIR", None)
    if model == "threads-8":
        argv = [sys.executable, "-c", THREADED, address]
    else:
        workers = model.removeprefix("workers-")
        argv = [sys.executable, "-m", "modelplane", "function", "serve", "--insecure"]
        argv += ["--address", address, "--metrics-address", "", "--workers", workers]
    process = subprocess.Popen(
        argv,
        env=env,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: os.sched_setaffinity(0, set(cores)),  # noqa: PLW1509 - no threads yet
    )
    return process, address


def drive(
    call: Callable[[bytes], bytes], requests: list[bytes], clients: int, seconds: float
) -> tuple[int, float, list[float]]:
    """``clients`` callers, each sending the next request (another tag each time) until time is up."""
    lock = threading.Lock()
    counter = [0]
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    def client() -> None:
        while time.perf_counter() < deadline:
            with lock:
                n = counter[0]
                counter[0] += 1
            data = retagged(requests[n % len(requests)], n)
            started = time.perf_counter()
            call(data)
            elapsed = (time.perf_counter() - started) * 1000
            with lock:
                latencies.append(elapsed)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(latencies), time.perf_counter() - started, latencies


def retagged(data: bytes, n: int) -> bytes:
    """``data`` with another ``meta.tag``: the same reconcile, not a remembered answer.

    A message field sent twice is merged, its scalars taken from the last: appending a
    ``meta`` holding only the tag retags the request without decoding it.
    """
    return (
        data + fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag=f"bench-{n}")).SerializeToString()
    )


def measure(
    model: str, cores: Sequence[int], requests: list[bytes], clients: int, seconds: float
) -> Run:
    """Start the server, warm every worker on every request, then drive it for ``seconds``."""
    process, address = start(model, cores)
    channel = grpc.insecure_channel(
        address,
        options=[
            ("grpc.max_send_message_length", MAX_BYTES),
            ("grpc.max_receive_message_length", MAX_BYTES),
        ],
    )
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
        call = channel.unary_unary(METHOD)
        drive(call, requests, clients, 0.0)
        for data in requests:  # every composite's documents validated in its worker
            call(data)
        cpu = server_cpu_seconds(process.pid)
        calls, elapsed, latencies = drive(call, requests, clients, seconds)
        cpu = server_cpu_seconds(process.pid) - cpu
    finally:
        channel.close()
        process.terminate()
        process.wait(timeout=30)
    workers = model.removeprefix("workers-")
    default = workers.isdigit() and int(workers) == min(len(cores), default_workers())
    return Run(len(cores), model, default, calls, elapsed, cpu, latencies)


def server_cpu_seconds(pid: int) -> float:
    """CPU time the server and its worker processes have used so far (user + system)."""
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    ticks = 0
    for each in pids:
        fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def report(runs: list[Run]) -> None:
    """One line per configuration: the median run's figures over the repeats."""
    print(
        f"{'cores':>5} {'model':<10} {'calls':>6} {'calls/s':>8} {'runs':<17} "
        f"{'CPU ms/call':>11} {'cores busy':>10} {'p50 ms':>7} {'p99 ms':>7}"
    )
    keys = list(dict.fromkeys((r.cores, r.model) for r in runs))
    for key in keys:
        same = sorted((r for r in runs if (r.cores, r.model) == key), key=lambda r: r.rate)
        run = same[len(same) // 2]
        ordered = sorted(run.latencies_ms)
        p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
        mark = " (default)" if run.default else ""
        rates = "/".join(f"{r.rate:.0f}" for r in same)
        print(
            f"{run.cores:>5} {run.model:<10} {run.calls:>6} {run.rate:>8.1f} {rates:<17} "
            f"{1000 * run.cpu_seconds / max(run.calls, 1):>11.2f} "
            f"{run.cpu_seconds / run.seconds:>10.2f} "
            f"{statistics.median(ordered):>7.1f} {p99:>7.1f}{mark}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="driven time per run")
    parser.add_argument("--clients", type=int, default=16, help="concurrent callers")
    parser.add_argument("--deployments", type=int, default=12, help="deployments (and replicas)")
    parser.add_argument("--clusters", type=int, default=100, help="InferenceClusters in the fleet")
    parser.add_argument("--models", default="threads-8,workers-1,workers-2")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each, interleaved")
    args = parser.parse_args(argv)
    available = sorted(os.sched_getaffinity(0))
    requests = workload(args.deployments, args.clusters)
    sizes = sorted(len(r) for r in requests)
    print(
        f"{len(requests)} requests ({sizes[0] // 1024}-{sizes[-1] // 1024} KiB), "
        f"{args.clients} clients, {args.seconds:.0f} s per run, CPUs {available}"
    )
    counts = [c for c in (1, 2) if c <= len(available)]
    if len(counts) < 2:
        print(f"2 cores: only {len(available)} available, skipped")
    runs = []
    for _ in range(args.repeat):
        for count in counts:
            for model in args.models.split(","):
                cores = available[:count]
                runs.append(measure(model, cores, requests, args.clients, args.seconds))
    report(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
