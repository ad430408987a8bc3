"""The ModelEndpoint and ModelService shapes upstream Modelplane v0.5 documents validate and
render (tests/fixtures/service-shapes/shapes.yaml, our own names and values).

The shapes are those of RedbackThomson/modelplane docs/content/models/model-service.md,
docs/content/models/model-endpoint.md and docs/content/guides/anthropic-messages-api.md
(@ 565b345696b9814e72660fe86f579e83acb3288a): whole and partial deployments, several
deployments, weights, a hosted provider, failover tiers, timeouts, the Anthropic schema.
The v0.3 fields (spec.url, spec.rewritePath) are refused naming their replacement
(tests/corpus/me-url-replaced.yaml).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from modelplane.cli.main import main
from modelplane.naming import MODEL_HEADER, backend_service_name, dns_name
from tests.composition.schemas import validate_manifest
from tests.paths import REPO

SHAPES = REPO / "tests" / "fixtures" / "service-shapes"

# Every field the upstream v0.5 examples set, as dotted paths ([] for a list item).
UPSTREAM_FIELDS = {
    "ModelEndpoint": {
        "metadata.labels",
        "spec.origin",
        "spec.api.schema",
        "spec.api.prefix",
        "spec.model",
        "spec.credential.apiKey.secretRef.name",
    },
    "ModelService": {
        "metadata.labels",
        "spec.endpoints[].name",
        "spec.endpoints[].selector.matchLabels",
        "spec.endpoints[].weight",
        "spec.endpoints[].priority",
        "spec.timeouts.request",
        "spec.timeouts.idle",
    },
}

# service: (backend endpoint, weight, priority) in route order, then (request, idle) timeouts
EXPECTED: dict[str, tuple[list[tuple[str, int, int]], tuple[str, str]]] = {
    "whole": ([("mistral-r0", 1, 0), ("mistral-r1", 1, 0)], ("300s", "60s")),
    "part": ([("mistral-r0", 1, 0)], ("300s", "60s")),
    "several": (
        [("mistral-r0", 1, 0), ("mistral-r1", 1, 0), ("mistral-next-r0", 2, 0)],
        ("300s", "60s"),
    ),
    # 90/10 over two replicas and one: 45, 45, 10, divided by their GCD
    "canary": (
        [("mistral-r0", 9, 0), ("mistral-r1", 9, 0), ("mistral-next-r0", 2, 0)],
        ("300s", "60s"),
    ),
    "shared": (
        [("mistral-r0", 1, 0), ("mistral-r1", 1, 0), ("mistral-hosted", 2, 0)],
        ("300s", "60s"),
    ),
    "tiered": (
        [("mistral-r0", 1, 0), ("mistral-r1", 1, 0), ("mistral-hosted", 1, 1)],
        ("300s", "60s"),
    ),
    "patient": ([("mistral-r0", 1, 0), ("mistral-r1", 1, 0)], ("900s", "0s")),
    "messages": (
        [("mistral-r0", 1, 0), ("mistral-r1", 1, 0), ("messages-hosted", 1, 1)],
        ("300s", "60s"),
    ),
}


def _paths(value: Any, prefix: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            path = f"{prefix}.{key}" if prefix else key
            if key in ("labels", "matchLabels"):
                yield path
                continue
            yield from _paths(inner, path)
    elif isinstance(value, list):
        for item in value:
            yield from _paths(item, f"{prefix}[]")
    else:
        yield prefix


def _documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((SHAPES / "shapes.yaml").read_text()) if d]


def test_the_shapes_use_every_field_the_upstream_examples_use() -> None:
    used: dict[str, set[str]] = {}
    for doc in _documents():
        used.setdefault(doc["kind"], set()).update(_paths(doc))
    for kind, fields in UPSTREAM_FIELDS.items():
        assert fields <= used[kind], f"{kind}: {sorted(fields - used[kind])} not shown"


def test_the_shapes_validate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(SHAPES)]) == 0
    assert capsys.readouterr().out.strip() == f"ok: {len(_documents())} objects"


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["render", str(SHAPES)]) == 0
    docs = [d for d in yaml.safe_load_all(out.getvalue()) if d]
    # The front door's objects are delivered to the gateway's cluster inside Objects.
    return [d["spec"]["forProvider"]["manifest"] if d["kind"] == "Object" else d for d in docs]


def test_every_rendered_object_is_valid_against_its_released_schema(
    rendered: list[dict[str, Any]],
) -> None:
    kinds = {o["kind"] for o in rendered}
    assert {"AIGatewayRoute", "BackendTrafficPolicy", "Backend", "AIServiceBackend"} <= kinds
    assert "BackendSecurityPolicy" in kinds  # the providers' keys
    for obj in rendered:
        if obj["apiVersion"].startswith("modelplane.ai/"):
            continue
        validate_manifest(obj)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_service_routes_as_documented(name: str, rendered: list[dict[str, Any]]) -> None:
    (route,) = [
        o
        for o in rendered
        if o["kind"] == "AIGatewayRoute"
        and o["metadata"]["labels"]["modelplane.ai/service"] == name
    ]
    backends, (request, idle) = EXPECTED[name]
    [rule] = route["spec"]["rules"]
    assert rule["matches"] == [
        {"headers": [{"type": "Exact", "name": MODEL_HEADER, "value": f"lab/{name}"}]}
    ]
    assert [(r["name"], r["weight"], r["priority"]) for r in rule["backendRefs"]] == [
        (dns_name(name, backend_service_name(e)), w, p) for e, w, p in backends
    ]
    assert (rule["timeouts"], rule["streamIdleTimeout"]) == ({"request": request}, idle)
