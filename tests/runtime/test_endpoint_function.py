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
def test_backend_over_grpc_is_what_render_composes(
    stubs: Stubs, tmp_path: Path, origin: str, secret: str | None
) -> None:
    xr = _endpoint("ep", origin, secret)
    (tmp_path / "ep.json").write_text(json.dumps(xr))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["render", "-o", "json", str(tmp_path)]) == 0
    rendered = json.loads(out.getvalue())
    first = stubs.v1.RunFunction(request(xr))
    assert requirements(first) == {}
    composed = desired(first)
    # The response's resources are a map: compare in render's order.
    keys = ["backend", "ai-service-backend"]
    # A keyed provider also gets its BackendSecurityPolicy over gRPC; a replica does not.
    keys += ["backend-security-policy"] if secret else []
    assert sorted(composed) == sorted(keys)
    assert [composed[k] for k in keys] == rendered
    kinds = [o["kind"] for o in rendered]
    assert kinds[:2] == ["Backend", "AIServiceBackend"]
    assert ("BackendSecurityPolicy" in kinds) == (secret is not None)
    assert composite_ready(first) != "READY_TRUE"
    assert [c[:3] for c in conditions(first)] == [("RoutingReady", "False", "Configuring")]
    # Once all exist, the backend's name is published and the endpoint is ready.
    later = stubs.v1.RunFunction(request(xr, observed=composed))
    assert desired(later) == composed
    assert composite_status(later)["routing"]["backendName"] == rendered[1]["metadata"]["name"]
    assert [c[:3] for c in conditions(later)] == [("RoutingReady", "True", "BackendReady")]


@pytest.mark.parametrize(
    "origin", ["ftp://x", "https://api.openai.com/v1"], ids=["scheme", "path in the origin"]
)
def test_invalid_origin_over_grpc(stubs: Stubs, origin: str) -> None:
    rsp = stubs.v1.RunFunction(request(_endpoint("bad", origin)))
    assert desired(rsp) == {}
    assert [c[:3] for c in conditions(rsp)] == [("RoutingReady", "False", "InvalidOrigin")]
    assert [s for s, _ in results(rsp)] == ["WARNING"]
