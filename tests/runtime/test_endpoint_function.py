"""The ModelEndpoint function over gRPC: the same backend as ``render``."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from modelplane.cli.main import main

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


def _endpoint(name: str, url: str) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": "ml-team", "uid": f"uid-{name}"},
        "spec": {"url": url},
    }


@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "http://203.0.113.7/ml-team/r-0/v1"])
def test_backend_over_grpc_is_what_render_composes(stubs: Stubs, tmp_path: Path, url: str) -> None:
    xr = _endpoint("ep", url)
    (tmp_path / "ep.json").write_text(json.dumps(xr))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["render", "-o", "json", str(tmp_path)]) == 0
    rendered = json.loads(out.getvalue())
    first = stubs.v1.RunFunction(request(xr))
    assert requirements(first) == {}
    composed = desired(first)
    # The response's resources are a map: compare in render's order (Service, slice, policy).
    keys = ["backend-service", "backend-endpointslice"]
    # An https endpoint also gets its BackendTLSPolicy over gRPC; an http one does not.
    keys += ["backend-tls-policy"] if url.startswith("https") else []
    assert sorted(composed) == sorted(keys)
    assert [composed[k] for k in keys] == rendered
    kinds = [o["kind"] for o in rendered]
    assert ("BackendTLSPolicy" in kinds) == url.startswith("https")
    assert composite_ready(first) != "READY_TRUE"
    assert [c[:3] for c in conditions(first)] == [("RoutingReady", "False", "Configuring")]
    # Once all exist, the backend's name is published and the endpoint is ready.
    later = stubs.v1.RunFunction(request(xr, observed=composed))
    assert desired(later) == composed
    assert composite_status(later)["routing"]["backendName"] == rendered[0]["metadata"]["name"]
    assert [c[:3] for c in conditions(later)] == [("RoutingReady", "True", "BackendReady")]


def test_invalid_url_over_grpc(stubs: Stubs) -> None:
    rsp = stubs.v1.RunFunction(request(_endpoint("bad", "ftp://x/v1")))
    assert desired(rsp) == {}
    assert [c[:3] for c in conditions(rsp)] == [("RoutingReady", "False", "InvalidURL")]
    assert [s for s, _ in results(rsp)] == ["WARNING"]
