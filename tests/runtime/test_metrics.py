"""The metrics endpoint Crossplane's Function pod declares (port 8080, /metrics)."""

from __future__ import annotations

import signal
import socket
import subprocess
import urllib.error
import urllib.request

import crossplane.function.proto.v1.run_function_pb2_grpc as grpcv1
import grpc
import pytest

from modelplane import memo
from modelplane.memo import Memo, MemoRegistry
from modelplane.runtime.crossplane.metrics import (
    DEFAULT_METRICS_ADDRESS,
    METRICS,
    Metrics,
    MetricsError,
    split_address,
    start_metrics_server,
)
from modelplane.runtime.crossplane.server import ServeConfig, ServeError, serve
from tests.paths import REPO

from .conftest import Stubs
from .helpers import free_port, inference_class, request, serve_argv, serve_env

# crossplane internal/controller/pkg/runtime/runtime.go (v2.0 to v2.3): every Function's
# runtime container gets the port named "metrics", 8080, and the pod the annotation
# prometheus.io/path: /metrics (runtime_override_options.go).
CROSSPLANE_METRICS_PORT = 8080
CROSSPLANE_METRICS_PATH = "/metrics"


def _get(port: int, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as rsp:
            return rsp.status, rsp.headers["Content-Type"], rsp.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, "", ""


def test_default_address_is_the_port_crossplane_declares() -> None:
    assert split_address(DEFAULT_METRICS_ADDRESS) == ("0.0.0.0", CROSSPLANE_METRICS_PORT)


@pytest.mark.parametrize("address", ["8080", "host:", "host:http", "host:70000"])
def test_bad_addresses_are_refused(address: str) -> None:
    with pytest.raises(MetricsError):
        split_address(address)


def test_counts_by_kind_and_result_in_the_exposition_format() -> None:
    metrics = Metrics()
    metrics.observe("ModelDeployment", False, 0.25)
    metrics.observe("ModelDeployment", True, 0.5)
    metrics.observe("ModelDeployment", False, 0.25)
    metrics.observe('Evil"\nKind', False, 1.0)  # unknown kinds do not grow the label set
    lines = metrics.render().splitlines()
    assert 'modelplane_function_requests_total{kind="ModelDeployment",result="ok"} 2' in lines
    assert 'modelplane_function_requests_total{kind="ModelDeployment",result="fatal"} 1' in lines
    assert 'modelplane_function_requests_total{kind="other",result="ok"} 1' in lines
    assert 'modelplane_function_request_duration_seconds_sum{kind="ModelDeployment"} 1.0' in lines
    assert 'modelplane_function_request_duration_seconds_count{kind="ModelDeployment"} 3' in lines
    assert "# TYPE modelplane_function_requests_total counter" in lines
    assert "# TYPE modelplane_function_request_duration_seconds summary" in lines


def test_every_memo_reports_hits_misses_entries_and_bound() -> None:
    registry = MemoRegistry()
    compiled: Memo[str, int] = Memo("cel.selector.programs", 2, registry)
    for key in ("a", "b", "a", "c"):
        compiled.get(key, lambda: 0)
    lines = Metrics(memo_stats=registry.stats).render().splitlines()
    assert 'modelplane_memo_hits_total{memo="cel.selector.programs"} 1' in lines
    assert 'modelplane_memo_misses_total{memo="cel.selector.programs"} 3' in lines
    assert 'modelplane_memo_entries{memo="cel.selector.programs"} 2' in lines
    assert 'modelplane_memo_bound_entries{memo="cel.selector.programs"} 2' in lines
    assert "# TYPE modelplane_memo_hits_total counter" in lines
    assert "# TYPE modelplane_memo_entries gauge" in lines


def test_served_metrics_name_every_memo_of_the_process(stubs: Stubs) -> None:
    stubs.v1.RunFunction(request(inference_class()))
    server = start_metrics_server("127.0.0.1:0")
    try:
        _, _, body = _get(server.server_address[1], CROSSPLANE_METRICS_PATH)
    finally:
        server.shutdown()
        server.server_close()
    served = {
        line.split('"')[1]
        for line in body.splitlines()
        if line.startswith("modelplane_memo_entries{")
    }
    assert served == set(memo.REGISTRY.names()) and "runtime.documents" in served


def test_served_metrics_count_the_calls_the_server_answers(stubs: Stubs) -> None:
    server = start_metrics_server("127.0.0.1:0")
    try:
        port = server.server_address[1]
        before = METRICS.render()
        stubs.v1.RunFunction(request(inference_class()))
        status, content_type, body = _get(port, CROSSPLANE_METRICS_PATH)
        assert status == 200
        assert content_type.startswith("text/plain; version=0.0.4")
        assert body != before
        line = next(
            x
            for x in body.splitlines()
            if x.startswith('modelplane_function_requests_total{kind="InferenceClass",result="ok"}')
        )
        assert int(line.rsplit(" ", 1)[1]) >= 1
        assert _get(port, "/other")[0] == 404
    finally:
        server.shutdown()
        server.server_close()


def test_busy_metrics_port_is_an_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        with pytest.raises(MetricsError, match="cannot listen"):
            start_metrics_server(f"127.0.0.1:{sock.getsockname()[1]}")


def test_serve_process_serves_metrics_beside_grpc() -> None:
    grpc_port, metrics_port = free_port(), free_port()
    env = serve_env()
    process = subprocess.Popen(
        serve_argv(
            f"127.0.0.1:{grpc_port}",
            "--metrics-address",
            f"127.0.0.1:{metrics_port}",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        grpcv1.FunctionRunnerServiceStub(channel).RunFunction(
            request(inference_class()), timeout=10
        )
        channel.close()
        status, _, body = _get(metrics_port, CROSSPLANE_METRICS_PATH)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err.decode()
    assert status == 200
    assert 'modelplane_function_requests_total{kind="InferenceClass",result="ok"} 1' in body


def test_the_image_exposes_grpc_and_metrics() -> None:
    exposed = [
        line.split()[1:]
        for line in (REPO / "Dockerfile").read_text(encoding="utf-8").splitlines()
        if line.startswith("EXPOSE ")
    ]
    assert exposed == [["9443", str(CROSSPLANE_METRICS_PORT)]]


def test_serve_refuses_a_busy_metrics_port() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        busy = sock.getsockname()[1]
        config = ServeConfig(
            address="127.0.0.1:0", insecure=True, metrics_address=f"127.0.0.1:{busy}"
        )
        with pytest.raises(ServeError, match="for metrics"):
            serve(config)
