"""Fixtures: the function server in-process on a free loopback port, and stubs for it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import crossplane.function.proto.v1.run_function_pb2_grpc as grpcv1
import crossplane.function.proto.v1beta1.run_function_pb2_grpc as grpcv1beta1
import grpc
import pytest

from modelplane.runtime.crossplane import deployment_fn
from modelplane.runtime.crossplane.server import MAX_MESSAGE_BYTES, ServeConfig, build_server

# The function's clock in every runtime test: what it stamps and judges is then
# the same on every run, and ``render --now`` at this time gives the same objects.
NOW = datetime(2026, 1, 15, 9, 0, 0, tzinfo=UTC)
NOW_TEXT = "2026-01-15T09:00:00Z"


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The deployment function told ``NOW`` instead of the wall clock."""
    monkeypatch.setattr(deployment_fn, "clock", lambda: NOW)
    yield


@dataclass
class Stubs:
    """Clients of the two services of one running server."""

    port: int
    v1: grpcv1.FunctionRunnerServiceStub
    v1beta1: grpcv1beta1.FunctionRunnerServiceStub


@pytest.fixture(scope="session")
def stubs() -> Iterator[Stubs]:
    """A server on 127.0.0.1:0 (insecure), shared by the session."""
    server, port = build_server(ServeConfig(address="127.0.0.1:0", insecure=True))
    server.start()
    channel = grpc.insecure_channel(
        f"127.0.0.1:{port}",
        options=[
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ],
    )
    try:
        yield Stubs(
            port,
            grpcv1.FunctionRunnerServiceStub(channel),
            grpcv1beta1.FunctionRunnerServiceStub(channel),
        )
    finally:
        channel.close()
        server.stop(None).wait()
