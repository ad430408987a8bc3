"""Many concurrent calls get the answers each gets alone, whatever the worker count.

The server runs as `modelplane function serve` in its own process (forking workers needs
a process of its own), its clock set to the tests' ``NOW`` so that an answer computed in
this process is the answer to compare with. Far more calls than workers arrive at once:
distinct requests of every function, and the same request many times over.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import grpc
import pytest

from modelplane.cli.function import MAX_DEFAULT_WORKERS as CLI_MAX_DEFAULT_WORKERS
from modelplane.cli.main import main
from modelplane.runtime.crossplane import deployment_fn, workers
from modelplane.runtime.crossplane.metrics import Metrics, Snapshot, merge, render
from modelplane.runtime.crossplane.server import MAX_MESSAGE_BYTES, run_bytes

from .conftest import NOW
from .helpers import (
    deployment,
    existing_cluster,
    free_port,
    inference_class,
    model_cache,
    ready_cluster,
    replica,
    request,
    satisfy,
    serve_env,
    worked_example_cluster,
)

METHOD = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction"
CALLS = 160
CLIENTS = 48
# The served process's clock, fixed as conftest fixes this process's (the forked workers
# inherit it).
LAUNCH = f"""
import sys
from datetime import datetime, timezone
from modelplane.runtime.crossplane import deployment_fn
deployment_fn.clock = lambda: datetime.fromisoformat({NOW.isoformat()!r})
from modelplane.cli.main import main
sys.exit(main(["function", "serve", "--insecure", *sys.argv[1:]]))
"""
WORLD = [
    *(ready_cluster(f"cluster-{i}", nodes=2) for i in range(6)),
    worked_example_cluster(),
    inference_class("h100-8x"),
    inference_class("l4-1x", count=1),
]


def _answer(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    return fnv1.RunFunctionResponse.FromString(run_bytes(req.SerializeToString()))


def _twice(xr: dict[str, Any]) -> list[fnv1.RunFunctionRequest]:
    """A composite's first call and its second, with what the first asked for."""
    first = request(xr)
    return [first, request(xr, required=satisfy(_answer(first), WORLD))]


def _placed(xr: dict[str, Any]) -> fnv1.RunFunctionRequest:
    """A deployment's call once its replicas exist and are Ready."""
    second = _twice(xr)[1]
    rsp = _answer(second)
    placed = fnv1.RunFunctionRequest()
    placed.CopyFrom(second)
    for key, resource in rsp.desired.resources.items():
        placed.observed.resources[key].resource.CopyFrom(resource.resource)
        status = placed.observed.resources[key].resource.get_or_create_struct("status")
        status.update({"conditions": [{"type": "Ready", "status": "True", "reason": "Ok"}]})
    return placed


def _requests() -> list[fnv1.RunFunctionRequest]:
    """Distinct requests of every function: first calls, fetched fleets, steady states."""
    out: list[fnv1.RunFunctionRequest] = []
    for n in range(3):
        out += _twice(deployment(f"model-{n}", replicas=1 + n))
    out.append(_placed(deployment("steady", replicas=2)))
    out += _twice(replica())
    out += _twice(replica("qwen3-8b-b", index=1, ready=True))
    out += _twice(existing_cluster(pools=[("h100", "h100-8x", 2), ("l4", "l4-1x", 1)]))
    cache = model_cache()
    cache["spec"]["clusterSelector"] = {"matchLabels": {"tier": "production"}}
    out += _twice(cache)
    out.append(request(inference_class()))
    return out


@pytest.fixture(scope="module")
def expected() -> list[tuple[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse]]:
    """Every request with the answer it gets alone, in this process, at ``NOW``."""
    # conftest's clock is set per test, after a module's fixtures are made.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(deployment_fn, "clock", lambda: NOW)
        return [(req, _answer(req)) for req in _requests()]


class Served:
    """A served function process and a channel to it."""

    def __init__(self, *flags: str) -> None:
        port, self.metrics_port = free_port(), free_port()
        argv = [sys.executable, "-c", LAUNCH, "--address", f"127.0.0.1:{port}"]
        argv += ["--metrics-address", f"127.0.0.1:{self.metrics_port}", *flags]
        self.process = subprocess.Popen(
            argv, env=serve_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self.channel = grpc.insecure_channel(
            f"127.0.0.1:{port}",
            options=[
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ],
        )
        grpc.channel_ready_future(self.channel).result(timeout=30)
        self.call: Callable[..., fnv1.RunFunctionResponse] = self.channel.unary_unary(
            METHOD,
            request_serializer=fnv1.RunFunctionRequest.SerializeToString,
            response_deserializer=fnv1.RunFunctionResponse.FromString,
        )

    def calls_counted(self) -> int:
        """Every RunFunction call /metrics counts, over every kind and result."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as rsp:  # noqa: S310 - loopback
            body = rsp.read().decode()
        return sum(
            int(line.rsplit(" ", 1)[1])
            for line in body.splitlines()
            if line.startswith("modelplane_function_requests_total{")
        )

    def stop(self) -> tuple[int | None, str]:
        """SIGTERM, and the exit code and log."""
        self.channel.close()
        self.process.send_signal(signal.SIGTERM)
        try:
            _, err = self.process.communicate(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        return self.process.returncode, err.decode()


@pytest.fixture(params=[1, 3], ids=["one-process", "three-workers"])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    server = Served("--workers", str(request.param))
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()


def test_concurrent_calls_get_the_answers_each_gets_alone(
    served: Served,
    expected: list[tuple[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse]],
) -> None:
    # Every request at least once, the rest of the calls the same few again and again.
    order = [n % len(expected) if n < 2 * len(expected) else n % 4 for n in range(CALLS)]
    with ThreadPoolExecutor(CLIENTS) as clients:
        answers = list(clients.map(lambda n: served.call(expected[n][0], timeout=60), order))
    wrong = [n for n, answer in zip(order, answers, strict=True) if answer != expected[n][1]]
    assert wrong == []
    assert served.calls_counted() == CALLS  # the pod's count, whichever process answered
    code, log = served.stop()
    assert code == 0, log
    assert '"msg": "stopped"' in log.splitlines()[-1]


def test_a_composite_is_always_answered_by_the_same_worker(
    expected: list[tuple[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse]],
) -> None:
    first, second = _twice(deployment("model-0"))
    assert (
        workers.composite_identity(first.SerializeToString()) == "ModelDeployment/ml-team/model-0"
    )
    for count in (2, 3, 4):
        assert workers.route(first.SerializeToString(), count) == workers.route(
            second.SerializeToString(), count
        )
    routed = {workers.route(req.SerializeToString(), 3) for req, _ in expected}
    assert routed == {0, 1, 2}


@pytest.mark.parametrize("data", [b"", b"\xff\xff\xff\xff", b"\x12\x05\x0a\x03abc", b"\x0b"])
def test_unreadable_bytes_are_routed_not_refused(data: bytes) -> None:
    assert workers.composite_identity(data) == ""
    assert workers.route(data, 3) in {0, 1, 2}


@pytest.mark.parametrize(
    ("cpu_max", "affinity", "expected"),
    [
        (None, 2, 2),
        ("max 100000\n", 2, 2),
        ("100000 100000\n", 2, 1),
        ("150000 100000\n", 2, 1),  # rounded down: a worker past the quota is throttled
        ("50000 100000\n", 2, 1),  # never fewer than one
        ("800000 100000\n", 2, 2),  # never more than the CPUs it may run on
        ("garbage\n", 2, 2),
    ],
)
def test_usable_cpus_are_the_affinity_within_the_cgroup_quota(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cpu_max: str | None,
    affinity: int,
    expected: int,
) -> None:
    path = tmp_path / "cpu.max"
    if cpu_max is not None:
        path.write_text(cpu_max)
    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: set(range(affinity)))
    assert workers.usable_cpus(path) == expected


def test_the_default_worker_count_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: set(range(64)))
    assert workers.default_workers(tmp_path / "absent") == workers.MAX_DEFAULT_WORKERS
    assert CLI_MAX_DEFAULT_WORKERS == workers.MAX_DEFAULT_WORKERS  # what --help says


def test_the_pod_metrics_are_the_sum_of_the_workers() -> None:
    one, two = Metrics(memo_stats=lambda: ()), Metrics(memo_stats=lambda: ())
    one.observe("ModelDeployment", False, 0.5)
    two.observe("ModelDeployment", False, 0.25)
    two.observe("ModelReplica", True, 1.0)
    lines = render(merge([one.snapshot(), two.snapshot(), Snapshot()])).splitlines()
    assert 'modelplane_function_requests_total{kind="ModelDeployment",result="ok"} 2' in lines
    assert 'modelplane_function_requests_total{kind="ModelReplica",result="fatal"} 1' in lines
    assert 'modelplane_function_request_duration_seconds_sum{kind="ModelDeployment"} 0.75' in lines


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5", "257"])
def test_an_invalid_worker_count_is_a_usage_error(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["function", "serve", "--insecure", "--workers", value])
    assert exit_info.value.code == 2
    assert f"invalid worker count {value!r}" in capsys.readouterr().err


POOL_SCRIPT = """
import sys
from modelplane.runtime.crossplane.workers import WorkerPool

def call(data: bytes) -> bytes:
    return data[::-1] * (1 + len(data) % 3)  # answers smaller and larger than the request

pool = WorkerPool(2, call, region_bytes=1024)
try:
    for size in (0, 1, 7, 8, 9, 341, 342, 512, 1023, 1024, 1025, 5000):
        data = bytes((size * 7 + i) % 256 for i in range(size))
        for _ in range(2):
            assert pool.call(data) == call(data), size
finally:
    pool.close()
print("ok")
"""


def test_calls_and_answers_of_any_size_pass_between_server_and_workers() -> None:
    # A call's bytes and its answer go through the memory region a worker shares with the
    # serving process, or through the pipe when larger than the region (a call in the
    # region is announced by its 8-byte length, one through the pipe is longer: calls of
    # every size around those bounds). In a process of its own: a fork here would
    # inherit other tests' gRPC threads.
    done = subprocess.run(
        [sys.executable, "-c", POOL_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr
