"""Fixtures: the function server in-process on a free loopback port, and stubs for it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import crossplane.function.proto.v1.run_function_pb2_grpc as grpcv1
import crossplane.function.proto.v1beta1.run_function_pb2_grpc as grpcv1beta1
import grpc
import pytest

from modelplane.runtime.crossplane.server import MAX_MESSAGE_BYTES, ServeConfig, build_server


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
