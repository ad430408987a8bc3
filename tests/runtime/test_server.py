"""The gRPC server: both services, mTLS, logs, and `modelplane function serve` as a process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import crossplane.function.proto.v1.run_function_pb2_grpc as grpcv1
import crossplane.function.proto.v1beta1.run_function_pb2 as fnv1beta1
import grpc
import pytest

from modelplane.cli.function import certs_dir, listen_address, optional_listen_address
from modelplane.cli.main import main
from modelplane.runtime.crossplane.server import ServeConfig, ServeError, build_server
from tests.paths import REPO

from .conftest import Stubs
from .helpers import (
    composite_ready,
    free_port,
    inference_class,
    request,
    results,
    serve_argv,
    serve_env,
)


def test_v1_and_v1beta1_both_answer(stubs: Stubs) -> None:
    req = request(inference_class())
    v1 = stubs.v1.RunFunction(req)
    beta = stubs.v1beta1.RunFunction(
        fnv1beta1.RunFunctionRequest.FromString(req.SerializeToString())
    )
    assert isinstance(beta, fnv1beta1.RunFunctionResponse)
    assert composite_ready(v1) == "READY_TRUE"
    assert beta.desired.composite.ready == fnv1beta1.READY_TRUE
    assert beta.meta.tag == req.meta.tag == v1.meta.tag
    assert beta.meta.ttl.seconds == 3600  # a record reads nothing but itself


def test_records_compose_nothing_and_set_no_condition(stubs: Stubs) -> None:
    rsp = stubs.v1.RunFunction(request(inference_class()))
    assert list(rsp.desired.resources) == [] and list(rsp.conditions) == [] and results(rsp) == []
    assert list(rsp.requirements.resources) == []


def test_context_is_passed_through(stubs: Stubs) -> None:
    req = request(inference_class())
    assert stubs.v1.RunFunction(req).context == req.context


def test_undecodable_bytes_get_a_fatal_result(stubs: Stubs) -> None:
    channel = grpc.insecure_channel(f"127.0.0.1:{stubs.port}")
    call = channel.unary_unary(
        "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction",
        request_serializer=lambda b: b,
        response_deserializer=fnv1.RunFunctionResponse.FromString,
    )
    rsp = call(b"\xff\xff\xff\xff")
    channel.close()
    assert rsp.results[0].severity == fnv1.SEVERITY_FATAL
    assert rsp.results[0].message.startswith("malformed request: cannot decode RunFunctionRequest")


def test_secure_server_needs_certificates(tmp_path: Path) -> None:
    with pytest.raises(ServeError, match="cannot read TLS certificates"):
        build_server(ServeConfig(address="127.0.0.1:0", tls_certs_dir=tmp_path))
    with pytest.raises(ServeError, match="no TLS certificates"):
        build_server(ServeConfig(address="127.0.0.1:0"))


def test_address_in_use_is_an_error() -> None:
    server, port = build_server(ServeConfig(address="127.0.0.1:0", insecure=True))
    server.start()
    try:
        with pytest.raises(ServeError, match="cannot listen"):
            build_server(ServeConfig(address=f"127.0.0.1:{port}", insecure=True))
    finally:
        server.stop(None).wait()


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certificates(directory: Path) -> None:
    """A CA, a server certificate for localhost and a client certificate, as Crossplane mounts them."""
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=test-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        cwd=directory,
    )
    (directory / "san.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name in ("tls", "client"):
        _openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            f"/CN={name}",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            cwd=directory,
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "san.cnf",
            "-out",
            f"{name}.crt",
            cwd=directory,
        )


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_mtls_requires_a_client_certificate_signed_by_the_ca(tmp_path: Path) -> None:
    _certificates(tmp_path)
    server, port = build_server(ServeConfig(address="127.0.0.1:0", tls_certs_dir=tmp_path))
    server.start()
    ca = (tmp_path / "ca.crt").read_bytes()
    try:
        trusted = grpc.secure_channel(
            f"localhost:{port}",
            grpc.ssl_channel_credentials(
                ca, (tmp_path / "client.key").read_bytes(), (tmp_path / "client.crt").read_bytes()
            ),
        )
        rsp = grpcv1.FunctionRunnerServiceStub(trusted).RunFunction(
            request(inference_class()), timeout=10
        )
        assert composite_ready(rsp) == "READY_TRUE"
        trusted.close()
        anonymous = grpc.secure_channel(f"localhost:{port}", grpc.ssl_channel_credentials(ca))
        with pytest.raises(grpc.RpcError):
            grpcv1.FunctionRunnerServiceStub(anonymous).RunFunction(
                request(inference_class()), timeout=10
            )
        anonymous.close()
    finally:
        server.stop(None).wait()


def test_certs_dir_defaults_to_the_environment() -> None:
    assert certs_dir(None, {"TLS_SERVER_CERTS_DIR": "/tls/server"}) == Path("/tls/server")
    assert certs_dir("/x", {"TLS_SERVER_CERTS_DIR": "/tls/server"}) == Path("/x")
    assert certs_dir(None, {}) is None


def test_serve_without_credentials_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TLS_SERVER_CERTS_DIR", raising=False)
    assert main(["function", "serve"]) == 2
    assert "--insecure" in capsys.readouterr().err


def test_bad_flags_are_usage_errors() -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["function", "serve", "--bogus"])
    assert exit_info.value.code == 2
    assert main(["function"]) == 2


@pytest.mark.parametrize(
    ("flag", "value", "reason"),
    [
        ("--address", "127.0.0.1:99999", "the port must be a number from 0 to 65535"),
        ("--address", "127.0.0.1:-1", "the port must be a number from 0 to 65535"),
        ("--address", "127.0.0.1:", "the port must be a number from 0 to 65535"),
        ("--address", "127.0.0.1", "want HOST:PORT"),
        ("--address", ":9443", "the host must be an IP address or a host name"),
        ("--address", "bad host:9443", "the host must be an IP address or a host name"),
        ("--address", "[not-v6]:9443", "the host must be an IP address or a host name"),
        ("--metrics-address", "0.0.0.0:70000", "the port must be a number from 0 to 65535"),
    ],
)
def test_an_invalid_listen_address_is_a_usage_error(
    flag: str, value: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # gRPC itself takes 127.0.0.1:99999 and listens on some other port.
    with pytest.raises(SystemExit) as exit_info:
        main(["function", "serve", "--insecure", flag, value])
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == (
        f"modelplane function serve: error: argument {flag}: invalid address {value!r}: {reason}"
    )


@pytest.mark.parametrize("value", ["127.0.0.1:0", "0.0.0.0:9443", "[::]:9443", "localhost:65535"])
def test_a_valid_listen_address_is_kept(value: str) -> None:
    assert listen_address(value) == value
    assert optional_listen_address("") == ""


def test_serve_process_answers_and_exits_zero_on_sigterm() -> None:
    port = free_port()
    env = serve_env()
    process = subprocess.Popen(
        serve_argv(
            f"127.0.0.1:{port}",
            # No metrics listener: :8080 may be taken on a shared machine (test_metrics.py).
            "--metrics-address",
            "",
            "--debug",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        rsp = grpcv1.FunctionRunnerServiceStub(channel).RunFunction(
            request(inference_class()), timeout=10
        )
        assert composite_ready(rsp) == "READY_TRUE"
        channel.close()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err.decode()
    assert out == b""
    lines = [json.loads(line) for line in err.decode().splitlines()]
    messages = [line["msg"] for line in lines]
    assert messages[0] == "serving composition functions" and lines[0]["port"] == port
    assert "function ran" in messages  # debug level
    assert messages[-1] == "stopped"
    assert all({"ts", "level", "logger", "msg"} <= set(line) for line in lines)


def test_serve_process_refuses_a_busy_address() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        started = time.monotonic()
        result = subprocess.run(
            serve_argv(
                f"127.0.0.1:{port}",
                "--metrics-address",
                "",
            ),
            capture_output=True,
            env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
            timeout=60,
        )
    assert result.returncode == 1, result.stderr
    assert b"cannot listen" in result.stderr
    assert time.monotonic() - started < 60
