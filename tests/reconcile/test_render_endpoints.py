"""`render` composes every ModelEndpoint's backend after the rest, in (namespace, name) order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.cli.main import main
from tests.paths import REPO

EXAMPLES = REPO / "examples"

ENDPOINTS = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelEndpoint
metadata: {name: openai-overflow, namespace: ml-team, labels: {model: llama}}
spec: {origin: "https://api.openai.com", model: gpt-4o-mini, credential: {apiKey: {secretRef: {name: openai-key}}}}
---
apiVersion: modelplane.ai/v1alpha1
kind: ModelEndpoint
metadata: {name: a-replica, namespace: ml-team, labels: {model: llama}}
spec: {origin: "http://203.0.113.7", api: {prefix: /ml-team/a-replica/v1}, model: llama}
---
apiVersion: modelplane.ai/v1alpha1
kind: ModelEndpoint
metadata: {name: broken, namespace: ml-team}
spec: {origin: "ftp://nowhere", model: llama}
"""


SERVICE = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelService
metadata: {name: llama, namespace: ml-team}
spec: {endpoints: [{selector: {matchLabels: {model: llama}}}]}
"""


def _delivered(text: str, prefix: str) -> list[dict[str, Any]]:
    """The manifests of the Objects named ``prefix...`` composed for the gateway default, in
    render's order."""
    return [
        o["spec"]["forProvider"]["manifest"]
        for o in yaml.safe_load_all(text)
        if o["kind"] == "Object"
        and o["metadata"]["name"].startswith(prefix)
        and o["metadata"]["annotations"]["crossplane.io/composition-resource-name"].startswith(
            "default-"
        )
    ]


def test_endpoints_compose_nothing_their_services_compose_their_backends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["render", str(EXAMPLES)]) == 0
    before, _ = capsys.readouterr()
    (tmp_path / "endpoints.yaml").write_text(ENDPOINTS)
    assert main(["render", str(EXAMPLES), str(tmp_path)]) == 0
    after, err = capsys.readouterr()
    assert after == before  # an endpoint composes nothing of its own
    assert "ml-team/broken (ModelEndpoint): InvalidOrigin: spec.origin:" in err
    # A service selecting them composes their backends beside its route on the gateway's
    # cluster (demo/: the InferenceGateway default on frontdoor).
    (tmp_path / "service.yaml").write_text(SERVICE)
    assert main(["render", str(EXAMPLES), str(REPO / "demo"), str(tmp_path)]) == 0
    added = _delivered(capsys.readouterr()[0], "llama-")
    assert [(o["kind"], o["metadata"]["name"].rsplit("-", 2)[0]) for o in added] == [
        ("Namespace", "ml"),
        ("Backend", "llama-a-replica-backend"),
        ("AIServiceBackend", "llama-a-replica-backend"),
        ("Backend", "llama-openai-overflow-backend"),
        ("AIServiceBackend", "llama-openai-overflow-backend"),
        # a credential: the key in the Secret is attached on the way to the provider
        ("BackendSecurityPolicy", "llama-openai-overflow-backend"),
        ("Secret", "openai"),  # observed there, never copied: openai-key
        ("AIGatewayRoute", "llama"),
        ("BackendTrafficPolicy", "llama"),
    ]
    backends = [o["spec"] for o in added if o["kind"] == "Backend"]
    assert backends[0]["endpoints"] == [{"ip": {"address": "203.0.113.7", "port": 80}}]
    # https: the gateway verifies the provider's certificate against the system CAs.
    assert backends[1]["endpoints"] == [{"fqdn": {"hostname": "api.openai.com", "port": 443}}]
    assert backends[1]["tls"] == {"sni": "api.openai.com", "wellKnownCACertificates": "System"}
    prefixes = [o["spec"]["schema"]["prefix"] for o in added if o["kind"] == "AIServiceBackend"]
    assert prefixes == ["/ml-team/a-replica/v1", "/v1"]
    [policy] = [o for o in added if o["kind"] == "BackendSecurityPolicy"]
    [secret] = [o for o in added if o["kind"] == "Secret"]
    assert secret == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "openai-key", "namespace": "ml-team"},
    }
    assert policy["spec"]["apiKey"] == {"secretRef": {"name": "openai-key", "namespace": "ml-team"}}


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
    [route] = [o for o in _delivered(out, "qwen3-8b-") if o["kind"] == "AIGatewayRoute"]
    refs = route["spec"]["rules"][0]["backendRefs"]
    qwen = [r for r in ready if r["metadata"]["labels"]["modelplane.ai/deployment"] == "qwen3-8b"]
    assert len(qwen) == 2
    # The two qwen3-8b replicas share tier 0 evenly; the provider is tier 1, taking traffic
    # only as they fail, and is asked for the model name it serves.
    assert [(r["weight"], r["priority"]) for r in refs] == [(1, 0), (1, 0), (1, 1)]
    names = sorted(r["metadata"]["name"] for r in qwen)
    # Named per service: qwen3-8b-<endpoint>-backend-<hash>-<hash>.
    assert [
        r["name"].removeprefix("qwen3-8b-").rsplit("-backend-", 1)[0] for r in refs[:2]
    ] == names
    assert refs[2]["modelNameOverride"] == "Qwen/Qwen3-8B"
    assert "ml-team/qwen3-8b (ModelService): http://198.51.100.20;" in err
    assert "for model ml-team/qwen3-8b" in err
