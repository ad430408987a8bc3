"""`render` composes every ModelEndpoint's backend after the rest, in (namespace, name) order."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from modelplane.cli.main import main
from tests.paths import REPO

EXAMPLES = REPO / "examples"

ENDPOINTS = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelEndpoint
metadata: {name: openai-overflow, namespace: ml-team, labels: {model: llama}}
spec: {url: "https://api.openai.com/v1"}
---
apiVersion: modelplane.ai/v1alpha1
kind: ModelEndpoint
metadata: {name: a-replica, namespace: ml-team, labels: {model: llama}}
spec: {url: "http://203.0.113.7/ml-team/a-replica/v1", rewritePath: /ml-team/a-replica/}
---
apiVersion: modelplane.ai/v1alpha1
kind: ModelEndpoint
metadata: {name: broken, namespace: ml-team}
spec: {url: "ftp://nowhere/v1"}
"""


def test_backends_follow_the_existing_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["render", str(EXAMPLES)]) == 0
    before, _ = capsys.readouterr()
    (tmp_path / "endpoints.yaml").write_text(ENDPOINTS)
    assert main(["render", str(EXAMPLES), str(tmp_path)]) == 0
    after, err = capsys.readouterr()
    assert after.startswith(before)  # the existing objects are byte-identical
    added = list(yaml.safe_load_all(after[len(before) :]))
    assert [(o["kind"], o["metadata"]["name"].rsplit("-", 1)[0]) for o in added] == [
        ("Service", "a-replica-backend"),
        ("EndpointSlice", "a-replica-backend"),
        ("Service", "openai-overflow-backend"),
        ("EndpointSlice", "openai-overflow-backend"),
        # https: the gateway speaks TLS to the hosted provider
        ("BackendTLSPolicy", "openai-overflow-backend"),
    ]
    assert [o["addressType"] for o in added if o["kind"] == "EndpointSlice"] == ["IPv4", "FQDN"]
    assert "ml-team/broken (ModelEndpoint): InvalidURL: spec.url:" in err


def test_demo_service_routes_the_ready_replicas_and_the_provider(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["render", str(EXAMPLES)]) == 0
    first, _ = capsys.readouterr()
    ready = [o for o in yaml.safe_load_all(first) if o["kind"] == "ModelReplica"]
    for replica in ready:
        replica["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "Ok"}]}
    (tmp_path / "observed.yaml").write_text(yaml.safe_dump_all(ready))
    assert main(["render", str(EXAMPLES), str(REPO / "demo"), str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    [route] = [o for o in yaml.safe_load_all(out) if o["kind"] == "HTTPRoute"]
    refs = route["spec"]["rules"][0]["backendRefs"]
    qwen = [r for r in ready if r["metadata"]["labels"]["modelplane.ai/deployment"] == "qwen3-8b"]
    assert len(qwen) == 2
    # 80 over the two qwen3-8b replicas (40/40), 20 to the provider, divided by the GCD.
    assert [r["weight"] for r in refs] == [2, 2, 1]
    paths = [r["filters"][0]["urlRewrite"]["path"]["replacePrefixMatch"] for r in refs]
    assert paths[:2] == sorted(f"/ml-team/{r['metadata']['name']}/" for r in qwen)
    assert paths[2] == "/"
    assert "ml-team/qwen3-8b (ModelService): http://198.51.100.20/ml-team/qwen3-8b;" in err
