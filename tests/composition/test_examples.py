"""The examples' deployments, placed by hand, compose to valid objects on both stacks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api import ModelReplica
from modelplane.composition import compose_replica
from modelplane.composition.namespaces import team_namespace

from .builders import cluster, manifests
from .operators import POD_IP, RunningPod, append, gangs, kubelet_argv, kubelet_env, prepend
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
    # Where the scheduler puts a new replica's objects (composition/namespaces.py).
    remote = team_namespace(meta["namespace"], cached="modelCacheRef" in spec)
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
                    "modelplane.ai/remote-namespace": remote,
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


# Image pins of the examples, each checked to exist (docs/composition.md "Examples"):
# vLLM v0.23.0 (vllm-project/vllm release notes, v0.23.0); llm-d-router v0.10.0 images
# (llm-d/llm-d-router .github/workflows/ci-release.yaml @ v0.10.0 pushes
# llm-d-router-endpoint-picker and llm-d-router-disagg-sidecar on every v* tag).
PINNED_IMAGES = {
    "vllm/vllm-openai:v0.23.0",
    "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0",
    "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0",
}
# Plugin types llm-d-router v0.10.0 registers as deprecated (cmd/epp/runner/runner.go).
DEPRECATED_PLUGINS = {
    "pd-profile-handler",
    "disagg-headers-handler",
    "prefill-header-handler",
    "by-label-selector",
    "by-label",
}


def _images(obj: Any) -> list[str]:
    if isinstance(obj, dict):
        found = [obj["image"]] if isinstance(obj.get("image"), str) else []
        return found + [i for v in obj.values() for i in _images(v)]
    if isinstance(obj, list):
        return [i for v in obj for i in _images(v)]
    return []


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_image_is_a_checked_pin(example: str) -> None:
    images = _images(_deployment(example))
    assert images and set(images) <= PINNED_IMAGES


def _flags(argv: list[str]) -> dict[str, str]:
    return dict(a.removeprefix("--").split("=", 1) if "=" in a else (a[2:], "") for a in argv)


@pytest.mark.parametrize(
    ("stack", "grove"),
    [("Standard", append), ("Dynamo", append), ("Dynamo", prepend)],
    ids=["lws", "grove-released", "grove-main"],
)
def test_llama_405b_forms_one_vllm_multi_node_group(stack: str, grove: Any) -> None:
    # vLLM multi-node without Ray (docs/serving/parallelism_scaling.md): every node runs
    # the same TP x PP with --nnodes, its own --node-rank and the leader as --master-addr;
    # the others run --headless. The gang's GPUs must hold TP x PP ranks exactly.
    replica = placed(_deployment("llama-405b.yaml"))
    gpus = sum(
        r.count * (m.worker.nodes if m.worker else 1)
        for m in replica.spec.engines[0].members
        for r in m.device_requests or []
    )
    workload = manifests(compose_replica(replica, cluster(stack)))["model-serving-llama-405b"]
    # Its template names a ModelCache, whose PVC is staged in `default`: the gang stays
    # there (a pod mounts only a PVC of its own namespace), and so do the names its pods
    # reach each other by.
    assert workload["metadata"]["namespace"] == "default"
    (group,) = gangs(workload, grove)
    leader = group[0]
    ranks = []
    for index, pod in enumerate(group):
        engine = next(c for c in pod.containers if c["name"] == "engine")
        argv, missing = kubelet_argv(pod, engine)
        assert missing == []
        assert argv[:2] == ["vllm", "serve"]
        flags = _flags(argv[2:])
        assert flags["master-addr"] == leader.dns_name
        assert int(flags["nnodes"]) == len(group)
        assert int(flags["tensor-parallel-size"]) * int(flags["pipeline-parallel-size"]) == gpus
        assert flags["distributed-executor-backend"] == "mp"
        assert ("headless" in flags) == (index > 0)
        ranks.append(int(flags["node-rank"]))
    assert ranks == list(range(len(group)))


def test_prefill_decode_example_runs_the_llm_d_chain() -> None:
    objs = manifests(compose_replica(placed(_deployment("qwen3-32b-pd.yaml")), cluster()))
    (target,) = objs["inference-pool"]["spec"]["targetPorts"]
    # Decode pods: the disagg sidecar owns the pool's port in plain HTTP and forwards to
    # the engine's port (pkg/sidecar/proxy/options.go @ v0.10.0: --secure-proxy defaults
    # to true, --vllm-port and --connector are gone or deprecated).
    decode = objs["model-serving-decode"]["spec"]["template"]["spec"]["containers"]
    engine, sidecar = decode
    engine_port = next(p["containerPort"] for p in engine["ports"] if p["name"] == "http")
    flags = _flags(sidecar["args"])
    assert int(flags["port"]) == target["number"] != engine_port
    assert int(flags["model-server-port"]) == engine_port
    assert flags["secure-proxy"] == "false" and flags["kv-connector"] == "nixlv2"
    assert not {"vllm-port", "connector"} & set(flags)
    # Both phases advertise the NIXL side channel on the pod's own IP.
    for key in ("model-serving-prefill", "model-serving-decode"):
        pod_spec = objs[key]["spec"]["template"]["spec"]
        pod = RunningPod("p", {}, "p", pod_spec["containers"])
        env, missing = kubelet_env(pod, pod_spec["containers"][0])
        assert missing == [] and env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == POD_IP
    # The picker config is in the format v0.10.0 loads without deprecation warnings.
    (config,) = objs["epp-config"]["data"].values()
    loaded = yaml.safe_load(config)
    assert loaded["apiVersion"] == "llm-d.ai/v1alpha1"
    assert not {p["type"] for p in loaded["plugins"]} & DEPRECATED_PLUGINS
