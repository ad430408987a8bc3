"""Routing and pickers: InferencePool, HTTPRoute, default and user pickers, PrefillDecode
(docs/composition.md, "Routes per gateway").
"""

from __future__ import annotations

import hashlib
import json

from modelplane.composition import compose_replica

from .builders import cluster, manifests, replica, standalone_engine, user_picker
from .shapes import SHAPES

POOL = "ml-team-qwen3-8b-e7f0a-pool-30aac"
EPP = "ml-team-qwen3-8b-e7f0a-epp-8f300"
B = "ml-team-qwen3-8b-e7f0a-84943"
# The replica's own picker objects; its ServiceAccount and RBAC are the cluster's.
PICKER_KEYS = [
    "epp-config",
    "epp",
    "epp-disruption-budget",
    "epp-service",
]


def test_unified_user_picker_runs_exactly_what_the_user_wrote() -> None:
    picker = user_picker(
        config=None,
        command=["/app/epp"],
        env=[
            {"name": "LOG_LEVEL", "value": "debug"},
            {
                "name": "TOKEN",
                "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": True}},
            },
        ],
        resources={"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}},
    )
    picker["template"]["spec"]["imagePullSecrets"] = [{"name": "ghcr"}]
    rep = replica(serving={"mode": "Unified", "router": "EndpointPicker", "endpointPicker": picker})
    objs = manifests(compose_replica(rep, cluster()))
    assert "epp-config" not in objs
    deployment = objs["epp"]
    assert deployment["metadata"]["namespace"] == objs["inference-pool"]["metadata"]["namespace"]
    template = deployment["spec"]["template"]
    assert template["metadata"] == {
        "labels": {
            "app": EPP,
            "modelplane.ai/deployment": "qwen3-8b",
            "modelplane.ai/deployment-namespace": "ml-team",
            "modelplane.ai/replica": "qwen3-8b-e7f0a",
        }
    }
    assert template["spec"] == {
        "serviceAccountName": "modelplane-epp",
        "terminationGracePeriodSeconds": 130,
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": EPP}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        },
        "containers": [
            {
                "name": "router",
                "image": "ghcr.io/llm-d/llm-d-inference-scheduler:v0.3.0",
                "command": ["/app/epp"],
                "args": [
                    "--pool-name=$(MODELPLANE_POOL_NAME)",
                    "--pool-namespace=$(MODELPLANE_POOL_NAMESPACE)",
                    "--config-file=$(MODELPLANE_PICKER_CONFIG)",
                    "--grpc-port=9002",
                ],
                "env": [
                    {"name": "MODELPLANE_SERVED_MODEL_NAME", "value": "ml-team/qwen3-8b"},
                    {"name": "MODELPLANE_POOL_NAME", "value": POOL},
                    # The pool is beside the picker, in the replica's team namespace.
                    {"name": "MODELPLANE_POOL_NAMESPACE", "value": "ml-team"},
                    {"name": "LOG_LEVEL", "value": "debug"},
                    {
                        "name": "TOKEN",
                        "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": True}},
                    },
                ],
                "resources": {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}},
                "ports": [{"name": "grpc", "containerPort": 9002}],
            }
        ],
        "imagePullSecrets": [{"name": "ghcr"}],
    }
    assert [o for o in objs if o.startswith("epp")] == [k for k in PICKER_KEYS if k != "epp-config"]


def test_user_picker_config_is_mounted_at_the_path_its_env_names() -> None:
    config = {
        "kind": "EndpointPickerConfig",
        "note": "naïve ✓",
        "plugins": [{"type": "b"}, {"type": "a"}],
    }
    rep = replica(
        serving={
            "mode": "Unified",
            "router": "EndpointPicker",
            "endpointPicker": user_picker(config),
        }
    )
    objs = manifests(compose_replica(rep, cluster()))
    text = objs["epp-config"]["data"]["epp-config.yaml"]
    assert text == json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert "naïve ✓" in text
    pod = objs["epp"]["spec"]["template"]
    container = pod["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    path = env["MODELPLANE_PICKER_CONFIG"]
    mount = container["volumeMounts"][0]
    volume = pod["spec"]["volumes"][0]
    assert volume == {"name": "config", "configMap": {"name": EPP}}
    assert mount == {"name": "config", "mountPath": "/config"}
    assert path == f"{mount['mountPath']}/{next(iter(objs['epp-config']['data']))}"
    assert (
        pod["metadata"]["annotations"]["modelplane.ai/epp-config-checksum"]
        == hashlib.sha256(text.encode("utf-8")).hexdigest()
    )


def test_prefill_decode_pool_selects_both_phases_on_the_prefill_port() -> None:
    objs = manifests(compose_replica(*SHAPES["prefill-decode-user-picker"]))
    pool = objs["inference-pool"]
    assert pool["spec"]["selector"] == {"matchLabels": {"modelplane.ai/serving": B}}
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]
    for engine, phase in (("prefill", "prefill"), ("decode", "decode")):
        labels = objs[f"model-serving-{engine}"]["spec"]["template"]["metadata"]["labels"]
        assert labels["modelplane.ai/serving"] == B
        assert labels["llm-d.ai/role"] == phase
        assert labels["modelplane.ai/phase"] == phase
    decode_pod = objs["model-serving-decode"]["spec"]["template"]["spec"]
    # The user's routing sidecar passes through untouched, beside the engine on 8001.
    assert [c["name"] for c in decode_pod["containers"]] == ["engine", "routing-sidecar"]
    assert decode_pod["containers"][0]["ports"] == [{"name": "http", "containerPort": 8001}]
    assert decode_pod["containers"][1]["readinessProbe"] == {
        "httpGet": {"path": "/health", "port": 8000}
    }
    assert [k for k in objs if k in ("model-route", "inference-pool")] == [
        "inference-pool",
        "model-route",
    ]
    assert objs["epp-config"]["data"]["epp-config.yaml"].startswith(
        '{"apiVersion":"llm-d.ai/v1alpha1"'
    )


def test_prefill_port_is_the_target_even_when_decode_comes_first() -> None:
    prefill = standalone_engine("p", phase="Prefill")
    prefill["members"][0]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "metrics", "containerPort": 9090},
        {"name": "http", "containerPort": 8200},
    ]
    decode = standalone_engine("d", phase="Decode")
    rep = replica(
        [decode, prefill],
        serving={
            "mode": "PrefillDecode",
            "router": "EndpointPicker",
            "endpointPicker": user_picker(),
        },
    )
    objs = manifests(compose_replica(rep, cluster()))
    assert objs["inference-pool"]["spec"]["targetPorts"] == [{"number": 8200}]
    ports = objs["model-serving-p"]["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert ports == [
        {"name": "metrics", "containerPort": 9090},
        {"name": "http", "containerPort": 8200},
    ]
    # No http port on the decode engine: 8000 is prepended.
    ports = objs["model-serving-d"]["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert ports == [{"name": "http", "containerPort": 8000}]


def test_unnamed_user_port_keeps_the_prepended_http_port_first() -> None:
    engine = standalone_engine()
    engine["members"][0]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 5000}]
    objs = manifests(compose_replica(replica([engine]), cluster()))
    ports = objs["model-serving-qwen3-8b"]["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert ports == [{"name": "http", "containerPort": 8000}, {"containerPort": 5000}]
    assert objs["inference-pool"]["spec"]["targetPorts"] == [{"number": 8000}]


def test_route_prefix_and_backend() -> None:
    route = manifests(compose_replica(replica(namespace="team-b", name="m-1"), cluster()))[
        "model-route"
    ]
    rule = route["spec"]["rules"][0]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/team-b/m-1/"}}]
    assert rule["backendRefs"][0]["kind"] == "InferencePool"
    assert rule["timeouts"] == {"request": "0s"}


def test_picker_pod_has_no_pool_pin_toleration_or_claim() -> None:
    for shape, (rep, clu) in SHAPES.items():
        pod = manifests(compose_replica(rep, clu))["epp"]["spec"]["template"]["spec"]
        assert not {"nodeSelector", "tolerations", "resourceClaims"} & set(pod), shape
