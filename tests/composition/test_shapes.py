"""Each workload shape, on the full composed object (docs/composition.md, "Objects, in order")."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from modelplane.composition import compose_replica
from modelplane.composition.marker import WAIT_SCRIPT

from .builders import cluster, gang_engine, manifests, pod_templates, replica, standalone_engine
from .shapes import PROXY_SIDECAR, SHAPES

B = "ml-team-qwen3-8b-e7f0a-84943"
PVC = "modelcache-ml-team-qwen-17db2"
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
PROBE = {
    "httpGet": {"path": "/health", "port": "http"},
    "initialDelaySeconds": 30,
    "periodSeconds": 10,
    "timeoutSeconds": 5,
}
# The gang entries (docs/composition.md "Gangs"): the copy index read from the
# operator's pod label, then an address spelled from our own names that refers only to
# it, then the rank (LWS: its worker-index label; Grove: 0 on the leader only).
LWS = "ml-team-qwen3-8b-e7f0a-big-206b3"
PCS = "ml-team-qwen3-8b-e-206b3"
LWS_ADDRESS = f"{LWS}-$(MODELPLANE_GANG_INDEX).{LWS}.ml-team"
GROVE_ADDRESS = f"{PCS}-0-gang-$(MODELPLANE_GANG_INDEX)-leader-0.{PCS}-0.ml-team.svc.cluster.local"


def _label(name: str, label: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}


LWS_GANG = _label("MODELPLANE_GANG_INDEX", "leaderworkerset.sigs.k8s.io/group-index")
LWS_RANK = _label("MODELPLANE_RANK", "leaderworkerset.sigs.k8s.io/worker-index")
GROVE_GANG = _label("MODELPLANE_GANG_INDEX", "grove.io/podcliquescalinggroup-replica-index")
# Every pod mounting the cache waits for its completion marker first.
WAIT_FOR_CACHE = {
    "name": "wait-for-model-cache",
    "image": "busybox:1.37.0",
    "command": ["/bin/sh", "-c", WAIT_SCRIPT],
    "volumeMounts": [{"name": "model-cache", "mountPath": "/mnt/models", "readOnly": True}],
    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
    "securityContext": {
        "runAsNonRoot": True,
        "runAsUser": 65534,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    },
}


def _pod(
    leader_or_worker: str, pool: str, rct: str | None, containers: list[Any], extra: dict[str, Any]
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeSelector": {"modelplane.ai/pool": pool},
        "tolerations": [TOLERATION],
    }
    if rct is not None:
        spec["resourceClaims"] = [{"name": "devices", "resourceClaimTemplateName": rct}]
    spec.update(extra)
    spec["initContainers"] = [WAIT_FOR_CACHE]
    spec["containers"] = containers
    spec["volumes"] = [
        {"name": "dshm", "emptyDir": {"medium": "Memory"}},
        {"name": "model-cache", "persistentVolumeClaim": {"claimName": PVC}},
    ]
    return spec


def _labels(role: str, **extra: str) -> dict[str, str]:
    labels = {
        "modelplane.ai/deployment": "qwen3-8b",
        "modelplane.ai/deployment-namespace": "ml-team",
        "modelplane.ai/replica": "qwen3-8b-e7f0a",
        "modelplane.ai/engine": "big",
        "modelplane.ai/role": role,
    }
    labels.update(extra)
    return labels


MOUNTS = [
    {"name": "dshm", "mountPath": "/dev/shm"},
    {"name": "model-cache", "mountPath": "/mnt/models"},
]
# Every container mounting the cache reads it as the hub cache, offline.
CACHE_ENV = [
    {"name": "HF_HUB_CACHE", "value": "/mnt/models"},
    {"name": "HF_HUB_OFFLINE", "value": "1"},
]


def _leader_container(gang: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": "engine",
        "image": "vllm/vllm-openai:v0.23.0",
        "command": ["sh", "-c"],
        "args": ["vllm serve --rank $(MODELPLANE_RANK) --leader $(MODELPLANE_LEADER_ADDRESS)"],
        "env": [
            {"name": "MODELPLANE_SERVED_MODEL_NAME", "value": "ml-team/qwen3-8b"},
            *gang,
            *CACHE_ENV,
        ],
        "ports": [{"name": "http", "containerPort": 8000}],
        "readinessProbe": PROBE,
        "resources": {"claims": [{"name": "devices"}]},
        "volumeMounts": MOUNTS,
    }


def _worker_container(env: list[dict[str, Any]]) -> dict[str, Any]:
    # A Worker's engine: no http port, no probe, no serving label.
    return {
        "name": "engine",
        "image": "vllm/vllm-openai:v0.23.0",
        "args": ["--worker"],
        "env": [
            {"name": "MODELPLANE_SERVED_MODEL_NAME", "value": "ml-team/qwen3-8b"},
            *env,
            *CACHE_ENV,
        ],
        "resources": {"claims": [{"name": "devices"}]},
        "volumeMounts": MOUNTS,
    }


def test_leader_worker_on_standard_is_a_leader_worker_set() -> None:
    objs = manifests(compose_replica(*SHAPES["leader-worker-standard"]))
    lws = objs["model-serving-big"]
    leader_rct = "ml-team-qwen3-8b-e7f0a-big-leader-devices-9beb2"
    worker_rct = "ml-team-qwen3-8b-e7f0a-big-worker-devices-03f56"
    rank = [LWS_GANG, {"name": "MODELPLANE_LEADER_ADDRESS", "value": LWS_ADDRESS}, LWS_RANK]
    assert lws == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": LWS, "namespace": "ml-team"},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": 3,
                "leaderTemplate": {
                    "metadata": {"labels": _labels("leader", **{"modelplane.ai/serving": B})},
                    "spec": _pod(
                        "leader",
                        "h100",
                        leader_rct,
                        [_leader_container(rank)],
                        {},
                    ),
                },
                "workerTemplate": {
                    "metadata": {"labels": _labels("worker")},
                    "spec": _pod("worker", "h100-b", worker_rct, [_worker_container(rank)], {}),
                },
            },
        },
    }
    assert list(objs) == [
        "model-serving-big",
        "resource-claim-big-leader",
        "resource-claim-big-worker",
        "inference-pool",
        "model-route",
        "epp",
        "epp-disruption-budget",
        "epp-service",
    ]
    for key, rct in (
        ("resource-claim-big-leader", leader_rct),
        ("resource-claim-big-worker", worker_rct),
    ):
        assert objs[key]["metadata"]["name"] == rct
        assert objs[key]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 8


def test_leader_worker_on_dynamo_is_a_pod_clique_set() -> None:
    objs = manifests(compose_replica(*SHAPES["leader-worker-dynamo"]))
    pcs = objs["model-serving-big"]
    kai = {"kai.scheduler/queue": "modelplane"}
    leader_rct = "ml-team-qwen3-8b-e7f0a-big-leader-devices-9beb2"
    worker_rct = "ml-team-qwen3-8b-e7f0a-big-worker-devices-03f56"
    worker_env = [GROVE_GANG, {"name": "MODELPLANE_LEADER_ADDRESS", "value": GROVE_ADDRESS}]
    assert pcs == {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": PCS, "namespace": "ml-team"},
        "spec": {
            "replicas": 1,
            "template": {
                "cliqueStartupType": "CliqueStartupTypeExplicit",
                "terminationDelay": "4h",
                "headlessServiceConfig": {"publishNotReadyAddresses": True},
                "cliques": [
                    {
                        "name": "leader",
                        "labels": _labels("leader", **{"modelplane.ai/serving": B}, **kai),
                        "spec": {
                            "roleName": "leader",
                            "replicas": 1,
                            "minAvailable": 1,
                            "podSpec": _pod(
                                "leader",
                                "h100",
                                leader_rct,
                                [
                                    _leader_container(
                                        [*worker_env, {"name": "MODELPLANE_RANK", "value": "0"}]
                                    )
                                ],
                                {"schedulerName": "kai-scheduler"},
                            ),
                        },
                    },
                    {
                        "name": "worker",
                        "labels": _labels("worker", **kai),
                        "spec": {
                            "roleName": "worker",
                            "replicas": 2,
                            "minAvailable": 2,
                            "podSpec": _pod(
                                "worker",
                                "h100-b",
                                worker_rct,
                                [_worker_container(worker_env)],
                                {"schedulerName": "kai-scheduler"},
                            ),
                        },
                    },
                ],
                "podCliqueScalingGroups": [
                    {
                        "name": "gang",
                        "cliqueNames": ["leader", "worker"],
                        "replicas": 1,
                        "minAvailable": 1,
                    }
                ],
            },
        },
    }
    assert len(pcs["metadata"]["name"]) <= 24
    # The routing objects do not depend on the stack.
    standard = manifests(compose_replica(*SHAPES["leader-worker-standard"]))
    for key in ("inference-pool", "model-route", "epp", "epp-service"):
        assert objs[key] == standard[key]


def test_standalone_is_the_same_deployment_on_both_stacks() -> None:
    standard = manifests(compose_replica(*SHAPES["standalone"]))
    dynamo = manifests(compose_replica(*SHAPES["standalone-on-dynamo"]))
    assert standard == dynamo
    pod = standard["model-serving-qwen3-8b"]["spec"]["template"]["spec"]
    assert "schedulerName" not in pod


def test_sidecar_gets_model_name_its_own_port_and_probe_but_no_claim_or_shm() -> None:
    objs = manifests(compose_replica(*SHAPES["sidecar"]))
    pod = objs["model-serving-qwen3-8b"]["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["engine", "proxy"]
    assert pod["containers"][1] == {
        "name": "proxy",
        "image": PROXY_SIDECAR["image"],
        "env": [{"name": "MODELPLANE_SERVED_MODEL_NAME", "value": "ml-team/qwen3-8b"}],
        "ports": [{"name": "proxy", "containerPort": 9000}],
        "readinessProbe": {"tcpSocket": {"port": 9000}},
    }


def test_claimless_leader_keeps_pin_and_toleration_but_claims_nothing() -> None:
    for shape in ("claimless-leader-standard", "claimless-leader-dynamo"):
        objs = manifests(compose_replica(*SHAPES[shape]))
        leader, worker = pod_templates(objs["model-serving-big"])
        assert leader["spec"]["nodeSelector"] == {"modelplane.ai/pool": "h100"}
        assert leader["spec"]["tolerations"] == [TOLERATION]
        assert "resourceClaims" not in leader["spec"]
        assert "resources" not in leader["spec"]["containers"][0]
        assert "resourceClaims" in worker["spec"]
        assert "resource-claim-big-leader" not in objs
        assert "resource-claim-big-worker" in objs


def test_cache_mounts_every_container_and_keeps_the_args_verbatim() -> None:
    # The seed's deployment with a cache: `--model=<repo id>` resolves from the hub cache.
    objs = manifests(compose_replica(*SHAPES["cache"]))
    pod = objs["model-serving-qwen3-8b"]["spec"]["template"]["spec"]
    assert pod["volumes"][1] == {"name": "model-cache", "persistentVolumeClaim": {"claimName": PVC}}
    assert pod["initContainers"] == [WAIT_FOR_CACHE]
    engine = pod["containers"][0]
    assert engine["args"] == [
        "--model=Qwen/Qwen3-8B",
        "--served-model-name=$(MODELPLANE_SERVED_MODEL_NAME)",
    ]
    assert engine["env"][-2:] == CACHE_ENV
    assert engine["volumeMounts"] == MOUNTS

    bare = standalone_engine()
    bare["members"][0]["template"]["spec"]["containers"][0]["args"] = ["--port=8000"]
    bare["members"][0]["template"]["spec"]["containers"].append(
        {"name": "side", "image": "busybox"}
    )
    pod = manifests(compose_replica(replica([bare], modelCacheRef={"name": "qwen"}), cluster()))[
        "model-serving-qwen3-8b"
    ]["spec"]["template"]["spec"]
    # Nothing is appended any more (validate warns about this engine instead).
    assert pod["containers"][0]["args"] == ["--port=8000"]
    assert pod["containers"][1]["volumeMounts"] == [
        {"name": "model-cache", "mountPath": "/mnt/models"}
    ]
    assert pod["containers"][1]["env"][-2:] == CACHE_ENV
    assert "args" not in pod["containers"][1]


def test_the_same_deployment_without_a_cache_downloads_as_before() -> None:
    engine = standalone_engine()
    pod = manifests(compose_replica(replica([engine]), cluster()))["model-serving-qwen3-8b"][
        "spec"
    ]["template"]["spec"]
    container = pod["containers"][0]
    assert container["args"] == [
        "--model=Qwen/Qwen3-8B",
        "--served-model-name=$(MODELPLANE_SERVED_MODEL_NAME)",
    ]
    names = {e["name"] for e in container["env"]}
    assert not names & {"HF_HUB_CACHE", "HF_HUB_OFFLINE"}
    assert "initContainers" not in pod
    assert [v["name"] for v in pod["volumes"]] == ["dshm"]
    assert container["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]


def test_args_and_command_are_never_rewritten() -> None:
    def engine_args(args: list[str] | None, command: list[str] | None = None) -> Any:
        eng = standalone_engine()
        container = eng["members"][0]["template"]["spec"]["containers"][0]
        container.pop("args")
        if args is not None:
            container["args"] = args
        if command is not None:
            container["command"] = command
        pod = manifests(compose_replica(replica([eng], modelCacheRef={"name": "c"}), cluster()))[
            "model-serving-qwen3-8b"
        ]["spec"]["template"]["spec"]
        return pod["containers"][0].get("args")

    assert engine_args(None) is None
    assert engine_args(["--model", "x"]) == ["--model", "x"]
    assert engine_args(["--model-name=x"]) == ["--model-name=x"]
    assert engine_args(["serve"], command=["vllm"]) == ["serve"]
    assert engine_args(None, command=["vllm"]) is None


def test_copies_map_to_each_workload_kind() -> None:
    objs = manifests(compose_replica(*SHAPES["copies"]))
    assert objs["model-serving-qwen3-8b"]["spec"]["replicas"] == 3
    group = objs["model-serving-gang"]["spec"]["template"]["podCliqueScalingGroups"][0]
    assert objs["model-serving-gang"]["spec"]["replicas"] == 1
    assert (group["replicas"], group["minAvailable"]) == (2, 2)
    lws = manifests(
        compose_replica(replica([gang_engine(copies=4)], modelCacheRef={"name": "qwen"}), cluster())
    )["model-serving-big"]
    assert lws["spec"]["replicas"] == 4
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2


def test_worker_without_worker_block_spans_one_node() -> None:
    engine = gang_engine()
    del engine["members"][1]["worker"]
    objs = manifests(compose_replica(replica([engine], modelCacheRef={"name": "q"}), cluster()))
    assert objs["model-serving-big"]["spec"]["leaderWorkerTemplate"]["size"] == 2


def test_two_engines_each_get_a_workload_followed_by_their_claims() -> None:
    objs = manifests(
        compose_replica(replica([standalone_engine("a"), standalone_engine("b")]), cluster())
    )
    assert list(objs)[:4] == [
        "model-serving-a",
        "resource-claim-a-standalone",
        "model-serving-b",
        "resource-claim-b-standalone",
    ]
    a = objs["model-serving-a"]["spec"]["template"]["metadata"]["labels"]
    b = objs["model-serving-b"]["spec"]["template"]["metadata"]["labels"]
    assert a["modelplane.ai/serving"] == b["modelplane.ai/serving"] == B
    assert a["modelplane.ai/workload"] != b["modelplane.ai/workload"]


def test_user_labels_and_annotations_reach_pods_and_managed_labels_win() -> None:
    engine = standalone_engine()
    engine["members"][0]["template"]["metadata"] = {
        "labels": {"team": "ml", "llm-d.ai/role": "mine"},
        "annotations": {"sidecar.istio.io/inject": "false"},
    }
    prefill = dict(engine, phase="Prefill")
    decode = standalone_engine("decode", phase="Decode")
    from .builders import user_picker

    objs = manifests(
        compose_replica(
            replica(
                [prefill, decode],
                serving={
                    "mode": "PrefillDecode",
                    "router": "EndpointPicker",
                    "endpointPicker": user_picker(),
                },
            ),
            cluster(),
        )
    )
    meta = objs["model-serving-qwen3-8b"]["spec"]["template"]["metadata"]
    assert meta["labels"]["team"] == "ml"
    assert meta["labels"]["llm-d.ai/role"] == "prefill"
    assert meta["annotations"] == {"sidecar.istio.io/inject": "false"}
    assert "annotations" not in objs["model-serving-decode"]["spec"]["template"]["metadata"]


def test_image_pull_secrets_are_copied_as_names() -> None:
    engine = standalone_engine()
    engine["members"][0]["template"]["spec"]["imagePullSecrets"] = [{"name": "regcred"}]
    pod = manifests(compose_replica(replica([engine]), cluster()))["model-serving-qwen3-8b"][
        "spec"
    ]["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]


def test_composition_is_deterministic() -> None:
    for shape, (rep, clu) in SHAPES.items():
        first = yaml.safe_dump([o.object for o in compose_replica(rep, clu).objects])
        again = yaml.safe_dump([o.object for o in compose_replica(rep, clu).objects])
        assert first == again, shape


@pytest.mark.parametrize(
    ("shape", "workload_kind", "count"),
    [
        ("standalone", "Deployment", 7),
        ("leader-worker-standard", "LeaderWorkerSet", 8),
        ("leader-worker-dynamo", "PodCliqueSet", 8),
    ],
)
def test_a_one_engine_replica_composes_at_most_eight_objects(
    shape: str, workload_kind: str, count: int
) -> None:
    # The picker's ServiceAccount, RBAC and default config are the cluster's, once; its
    # disruption budget is the replica's own (one more than before the pickers were two).
    objs = manifests(compose_replica(*SHAPES[shape]))
    assert len(objs) == count <= 8
    assert [m["kind"] for m in objs.values()][0] == workload_kind
    assert not {"epp-serviceaccount", "epp-role", "epp-rolebinding", "epp-config"} & set(objs)
