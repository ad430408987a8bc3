"""The examples' deployments, placed by hand, compose to valid objects on both stacks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api import ModelReplica
from modelplane.composition import compose_replica

from .builders import cluster, manifests
from .schemas import REPO_ROOT, require_shared, validate_delivered

EXAMPLES = REPO_ROOT / "examples" / "deployments"


def _deployment(file: str) -> dict[str, Any]:
    path = EXAMPLES / file
    if not path.is_file():
        pytest.skip(f"example {path} not found")
    return next(
        d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == "ModelDeployment"
    )


def placed(deployment: dict[str, Any]) -> ModelReplica:
    """The deployment's first replica as the scheduler would write it, every member on pool h100."""
    template = deployment["spec"]["template"]
    engines = []
    for engine in template["spec"]["engines"]:
        members = []
        for member in engine["members"]:
            out: dict[str, Any] = {
                "role": member.get("role", "Standalone"),
                "nodePoolName": "h100",
                "template": member["template"],
            }
            if "worker" in member:
                out["worker"] = member["worker"]
            if "nodeSelector" in member:
                out["deviceRequests"] = [
                    {
                        "name": d["name"],
                        "deviceClassName": "gpu.nvidia.com",
                        "count": d.get("count", 1),
                        "selectors": d["selectors"],
                    }
                    for d in member["nodeSelector"]["devices"]
                ]
            members.append(out)
        engines.append(
            {
                **{k: v for k, v in engine.items() if k != "members"},
                "copies": engine.get("copies", 1),
                "members": members,
            }
        )
    spec: dict[str, Any] = {"clusterName": "us-east-1", "engines": engines}
    for key in ("modelCacheRef", "serving"):
        if key in template["spec"]:
            spec[key] = template["spec"][key]
    meta = deployment["metadata"]
    return ModelReplica.model_validate(
        {
            "apiVersion": "modelplane.ai/v1alpha1",
            "kind": "ModelReplica",
            "metadata": {
                "name": f"{meta['name']}-00000",
                "namespace": meta["namespace"],
                "labels": {
                    "modelplane.ai/deployment": meta["name"],
                    "modelplane.ai/deployment-namespace": meta["namespace"],
                },
            },
            "spec": spec,
        }
    )


@pytest.mark.parametrize(
    ("stack", "kind"), [("Standard", "LeaderWorkerSet"), ("Dynamo", "PodCliqueSet")]
)
def test_multi_node_example_renders_a_valid_gang(stack: str, kind: str) -> None:
    require_shared()
    composition = compose_replica(placed(_deployment("llama-405b.yaml")), cluster(stack))
    for composed in composition.objects:
        validate_delivered(composed.object)
    objs = manifests(composition)
    assert objs["model-serving-llama-405b"]["kind"] == kind
    assert {"resource-claim-llama-405b-leader", "resource-claim-llama-405b-worker"} <= set(objs)


def test_prefill_decode_example_renders_a_consistent_set() -> None:
    require_shared()
    composition = compose_replica(placed(_deployment("qwen3-32b-pd.yaml")), cluster())
    for composed in composition.objects:
        validate_delivered(composed.object)
    objs = manifests(composition)
    pool = objs["inference-pool"]
    selector = pool["spec"]["selector"]["matchLabels"]
    for engine in ("prefill", "decode"):
        labels = objs[f"model-serving-{engine}"]["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items()
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]
    assert [k for k in objs if k == "model-route"] == ["model-route"]
    picker = objs["epp"]["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in picker["containers"][0]["env"]}
    mount = picker["containers"][0]["volumeMounts"][0]["mountPath"]
    (config_key,) = objs["epp-config"]["data"]
    assert env["MODELPLANE_PICKER_CONFIG"] == str(Path(mount) / config_key)
    assert picker["volumes"] == [
        {"name": "config", "configMap": {"name": objs["epp-config"]["metadata"]["name"]}}
    ]
