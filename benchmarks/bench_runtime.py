"""RunFunction round trips over loopback gRPC for the ModelDeployment function.

For 10, 100 and 1,000 InferenceClusters in ``required_resources`` it reports p50 and
p99 latency of one call as Crossplane makes it in steady state: the fleet fetched, the
deployment's replicas observed (Ready). ``warm`` calls repeat the identical request (what
Crossplane sends between changes; its whole answer is remembered,
``runtime.answers``); ``cold`` calls change every cluster's resourceVersion, so the
reconcile runs and each object is validated afresh. The fleet-scale figures (docs/performance.md)
are ``bench_fleet_rpc.py``'s.
Target: warm p99 under 50 ms at 100 clusters. Runs in well under a minute.
"""

from __future__ import annotations

import copy
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import crossplane.function.proto.v1.run_function_pb2_grpc as grpcv1
import grpc

# The tests' builders import as ``runtime.helpers`` and import ``tests.builders`` in turn.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from runtime.helpers import (  # noqa: E402 - the tests' builders, after the path is set
    deployment,
    inference_class,
    ready_cluster,
    request,
    satisfy,
)

from modelplane.runtime.crossplane.server import (  # noqa: E402
    MAX_MESSAGE_BYTES,
    ServeConfig,
    build_server,
    tune_gc,
)

TARGET_P99_MS = 50.0
REPLICAS = 10


def _fleet(size: int) -> list[dict[str, Any]]:
    clusters = [ready_cluster(f"cluster-{i:04d}", nodes=4) for i in range(size)]
    return [*clusters, inference_class()]


def _steady_request(stub: Any, size: int) -> fnv1.RunFunctionRequest:
    """The request of a reconcile after the replicas were created and turned Ready."""
    xr = deployment(replicas=REPLICAS)
    world = _fleet(size)
    first = stub.RunFunction(request(xr))
    fetched = satisfy(first, world)
    placed = stub.RunFunction(request(xr, required=fetched))
    observed = {}
    for key, resource in placed.desired.resources.items():
        obj = json_of(resource.resource)
        obj["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}
        observed[key] = obj
    return request(xr, observed=observed, required=fetched)


def json_of(struct: Any) -> dict[str, Any]:
    from google.protobuf import json_format

    return json_format.MessageToDict(struct)  # type: ignore[no-any-return]


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return statistics.median(ordered), p99


def _measure(stub: Any, req: fnv1.RunFunctionRequest, calls: int) -> list[float]:
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        rsp = stub.RunFunction(req)
        samples.append((time.perf_counter() - started) * 1000)
        assert not any(r.severity == fnv1.SEVERITY_FATAL for r in rsp.results), rsp.results
    return samples


def _cold_requests(req: fnv1.RunFunctionRequest, calls: int) -> list[fnv1.RunFunctionRequest]:
    out = []
    for n in range(calls):
        fresh = copy.deepcopy(req)
        for item in fresh.required_resources["clusters"].items:
            item.resource["metadata"]["resourceVersion"] = f"cold-{n}"
        out.append(fresh)
    return out


def main() -> int:
    server, port = build_server(ServeConfig(address="127.0.0.1:0", insecure=True))
    tune_gc()  # as `modelplane function serve` does
    server.start()
    channel = grpc.insecure_channel(
        f"127.0.0.1:{port}",
        options=[
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ],
    )
    stub = grpcv1.FunctionRunnerServiceStub(channel)
    ok = True
    print(f"{'clusters':>8} {'mode':>5} {'calls':>5} {'p50 ms':>8} {'p99 ms':>8}")
    try:
        for size, calls, cold_calls in ((10, 300, 30), (100, 200, 20), (1000, 40, 5)):
            req = _steady_request(stub, size)
            _measure(stub, req, 3)  # warm the memo and the connection
            p50, p99 = _percentiles(_measure(stub, req, calls))
            print(f"{size:>8} {'warm':>5} {calls:>5} {p50:>8.2f} {p99:>8.2f}")
            if size == 100 and p99 >= TARGET_P99_MS:
                ok = False
            cold = []
            for fresh in _cold_requests(req, cold_calls):
                cold.extend(_measure(stub, fresh, 1))
            p50, p99 = _percentiles(cold)
            print(f"{size:>8} {'cold':>5} {cold_calls:>5} {p50:>8.2f} {p99:>8.2f}")
    finally:
        channel.close()
        server.stop(None).wait()
    print(f"target: warm p99 < {TARGET_P99_MS:.0f} ms at 100 clusters: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
