"""The ModelEndpoint function over gRPC: the same backend as ``render``."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from modelplane.cli.main import main
from modelplane.naming import backend_service_name

from .conftest import Stubs
from .helpers import (
    composite_ready,
    composite_status,
    conditions,
    desired,
    request,
    requirements,
    results,
)


def _endpoint(name: str, origin: str, secret: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"origin": origin, "model": "gpt-4o-mini"}
    if secret is not None:
        spec["credential"] = {"apiKey": {"secretRef": {"name": secret}}}
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": "ml-team", "uid": f"uid-{name}"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("origin", "secret"), [("https://api.openai.com", "openai-key"), ("http://203.0.113.7", None)]
)
def test_endpoint_over_grpc_is_what_render_shows(
    stubs: Stubs, tmp_path: Path, origin: str, secret: str | None
) -> None:
    """The endpoint composes nothing (its services compose its backend on their gateways'
    clusters) and publishes its backend's name at once."""
    xr = _endpoint("ep", origin, secret)
    (tmp_path / "ep.json").write_text(json.dumps(xr))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["render", "-o", "json", str(tmp_path)]) == 0
    assert json.loads(out.getvalue()) == []
    rsp = stubs.v1.RunFunction(request(xr))
    assert requirements(rsp) == {} and desired(rsp) == {}
    assert composite_status(rsp)["routing"]["backendName"] == backend_service_name("ep")
    assert composite_ready(rsp) == "READY_TRUE"
    assert [c[:3] for c in conditions(rsp)] == [("RoutingReady", "True", "BackendReady")]


@pytest.mark.parametrize(
    "origin", ["ftp://x", "https://api.openai.com/v1"], ids=["scheme", "path in the origin"]
)
def test_invalid_origin_over_grpc(stubs: Stubs, origin: str) -> None:
    rsp = stubs.v1.RunFunction(request(_endpoint("bad", origin)))
    assert desired(rsp) == {}
    assert [c[:3] for c in conditions(rsp)] == [("RoutingReady", "False", "InvalidOrigin")]
    assert [s for s, _ in results(rsp)] == ["WARNING"]
