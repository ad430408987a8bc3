"""Warnings for deployments that compose but cannot serve (docs/composition.md "Warnings").

Each warning has a deployment that triggers it and a near twin that does not; the CLI
prints them located like errors, on stderr, without changing the exit code.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api import ModelDeployment
from modelplane.cli.main import main
from modelplane.composition.serving_warnings import ServingWarning, serving_warnings
from tests.builders import memory_selector
from tests.paths import REPO

EXAMPLES = REPO / "examples" / "deployments"
SEL = [{"cel": memory_selector("75Gi")}]
NIXL = '--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_both"}'
POD_IP = {
    "name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
    "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
}


def _member(role: str, *containers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "role": role,
        "nodeSelector": {"devices": [{"name": "gpu", "count": 8, "selectors": SEL}]},
        "template": {"spec": {"containers": list(containers)}},
        **extra,
    }


def _engine_container(*args: str, **extra: Any) -> dict[str, Any]:
    return {"name": "engine", "image": "vllm/vllm-openai:v0.23.0", "args": list(args), **extra}


def _deployment(engines: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "d", "namespace": "ml-team"},
        "spec": {"replicas": 1, "template": {"spec": {"engines": engines, **spec}}},
    }


def gang(worker_args: list[str], worker_env: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A Leader + Worker deployment whose Worker runs ``worker_args``."""
    worker = _engine_container(*worker_args, **({"env": worker_env} if worker_env else {}))
    leader = _engine_container(
        "--model=Qwen/Qwen3-235B-A22B", "--master-addr=$(MODELPLANE_LEADER_ADDRESS)"
    )
    return _deployment(
        [
            {
                "name": "big",
                "members": [
                    _member("Leader", leader),
                    _member("Worker", worker, worker={"nodes": 1}),
                ],
            }
        ],
        modelCacheRef={"name": "weights"},
    )


SIDECAR = {
    "name": "routing-proxy",
    "image": "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0",
    "args": ["--port=8000", "--model-server-port=8200", "--secure-proxy=false"],
    "ports": [{"name": "proxy", "containerPort": 8000}],
}


def prefill_decode(
    decode_containers: list[dict[str, Any]], env: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A PrefillDecode deployment: prefill on 8000, the given decode pod containers."""
    env = [POD_IP] if env is None else env
    prefill = _engine_container(NIXL, env=env, ports=[{"name": "http", "containerPort": 8000}])
    picker = {
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "epp",
                        "image": "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0",
                    }
                ]
            }
        }
    }
    return _deployment(
        [
            {"name": "prefill", "phase": "Prefill", "members": [_member("Standalone", prefill)]},
            {
                "name": "decode",
                "phase": "Decode",
                "members": [_member("Standalone", *decode_containers)],
            },
        ],
        serving={"mode": "PrefillDecode", "router": "EndpointPicker", "endpointPicker": picker},
    )


def decode_engine(port: int = 8200, env: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    env = [POD_IP] if env is None else env
    return _engine_container(
        f"--port={port}", NIXL, env=env, ports=[{"name": "http", "containerPort": port}]
    )


def _warnings(doc: dict[str, Any]) -> list[ServingWarning]:
    return serving_warnings(ModelDeployment.model_validate(doc))


WORKER_PATH = "spec.template.spec.engines[0].members[1].template.spec.containers"
ENGINE_ARGS = "spec.template.spec.engines[0].members[0].template.spec.containers[0].args"
NAMES_NO_MODEL = "engine one: the engine names no model (no --model, no command) but mounts"
FLAT_PATH = "engine one: --model=/mnt/models loads a flat model directory"


def cached(*args: str, command: list[str] | None = None, cache: bool = True) -> dict[str, Any]:
    """A Standalone deployment whose engine runs ``args`` (and ``command``), with a cache."""
    engine = _engine_container(*args, **({"command": command} if command else {}))
    spec = {"modelCacheRef": {"name": "weights"}} if cache else {}
    return _deployment([{"name": "one", "members": [_member("Standalone", engine)]}], **spec)


DECODE_PATH = "spec.template.spec.engines[1].members[0].template.spec.containers"

# (case, document, expected [(path, start of message)]): each trigger and its twin.
CASES: list[tuple[str, Callable[[], dict[str, Any]], list[tuple[str, str]]]] = [
    (
        "worker never names the leader",
        lambda: gang(["--headless", "--node-rank=1"]),
        [(WORKER_PATH, "engine big: no container of the Worker references")],
    ),
    (
        "worker names the leader in args",
        lambda: gang(["--headless", "--master-addr=$(MODELPLANE_LEADER_ADDRESS)"]),
        [],
    ),
    (
        "worker names the leader from a shell",
        lambda: gang(["ray start --block --address=${MODELPLANE_LEADER_ADDRESS}:6379"]),
        [],
    ),
    (
        "worker names the leader in an env value",
        lambda: gang([], [{"name": "MASTER", "value": "$(MODELPLANE_LEADER_ADDRESS)"}]),
        [],
    ),
    (
        "a cache and an engine naming no model",
        lambda: cached("--port=8000"),
        [(ENGINE_ARGS, NAMES_NO_MODEL)],
    ),
    ("the same engine without a cache", lambda: cached("--port=8000", cache=False), []),
    ("a cache and --model=<repo id>", lambda: cached("--model=Qwen/Qwen3-8B"), []),
    ("a cache and --model <repo id>", lambda: cached("--model", "Qwen/Qwen3-8B"), []),
    ("a cache and a positional model", lambda: cached("Qwen/Qwen3-8B", "--port=8000"), []),
    ("a cache and a command the check cannot read", lambda: cached(command=["/bin/sh"]), []),
    (
        "a cache and --model=<the flat mount>",
        lambda: cached("--model=/mnt/models"),
        [(ENGINE_ARGS, FLAT_PATH)],
    ),
    (
        "a cache and --model <the flat mount>/",
        lambda: cached("--model", "/mnt/models/"),
        [(ENGINE_ARGS, FLAT_PATH)],
    ),
    (
        "a cache and a command with --model=<the flat mount>",
        lambda: cached("--model=/mnt/models", command=["vllm", "serve"]),
        [(ENGINE_ARGS, FLAT_PATH)],
    ),
    (
        "a cache and a Worker loading the flat mount",
        lambda: gang(["--model=/mnt/models", "--master-addr=$(MODELPLANE_LEADER_ADDRESS)"]),
        [(f"{WORKER_PATH}[0].args", "engine big: --model=/mnt/models loads a flat model")],
    ),
    (
        "a cache and a snapshot path under the mount",
        lambda: cached("--model=/mnt/models/models--Qwen--Qwen3-8B/snapshots/abc"),
        [],
    ),
    (
        "decode pods without a sidecar",
        lambda: prefill_decode([decode_engine(8000)]),
        [(DECODE_PATH, "engine decode: the decode pods have no routing sidecar container")],
    ),
    (
        "decode engine on the pool's port beside its sidecar",
        lambda: prefill_decode([decode_engine(8000), SIDECAR]),
        [(DECODE_PATH, "engine decode: the decode engine listens on the pool's target port 8000")],
    ),
    ("decode pods with a sidecar in front", lambda: prefill_decode([decode_engine(), SIDECAR]), []),
    (
        "NIXL without a side-channel host",
        lambda: prefill_decode([decode_engine(env=[]), SIDECAR]),
        [(f"{DECODE_PATH}[0].env", "container engine uses vLLM's NixlConnector without")],
    ),
    (
        "NIXL with a loopback side-channel host",
        lambda: prefill_decode(
            [decode_engine(), SIDECAR],
            env=[{"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "value": "localhost"}],
        ),
        [
            (
                "spec.template.spec.engines[0].members[0].template.spec.containers[0].env",
                "container engine uses vLLM's NixlConnector without",
            )
        ],
    ),
    (
        "NIXL with a literal pod address",
        lambda: prefill_decode(
            [decode_engine(), SIDECAR],
            env=[{"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "value": "10.0.0.7"}],
        ),
        [],
    ),
]


@pytest.mark.parametrize(("case", "build", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_warning_fires_exactly_where_it_should(
    case: str, build: Callable[[], dict[str, Any]], expected: list[tuple[str, str]]
) -> None:
    got = _warnings(build())
    assert [(w.path, w.message[: len(m)]) for w, (_, m) in zip(got, expected, strict=False)] == [
        (p, m) for p, m in expected
    ]
    assert len(got) == len(expected), [w.message for w in got]


def test_a_standalone_deployment_has_no_gang_or_sidecar_warning() -> None:
    doc = _deployment([{"name": "one", "members": [_member("Standalone", _engine_container())]}])
    assert _warnings(doc) == []


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_the_examples_print_no_warning(example: str) -> None:
    docs = [d for d in yaml.safe_load_all((EXAMPLES / example).read_text()) if d]
    deployments = [d for d in docs if d["kind"] == "ModelDeployment"]
    assert deployments
    for doc in deployments:
        assert _warnings(doc) == []


@pytest.mark.parametrize("verb", ["validate", "render"])
def test_the_cli_prints_warnings_located_on_stderr_and_keeps_exit_0(
    verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = gang(["--headless"])
    fleet = REPO / "examples" / "fleet"
    path = tmp_path / "gang.yaml"
    cache = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelCache",
        "metadata": {"name": "weights", "namespace": "ml-team"},
        "spec": {"source": "HuggingFace", "huggingFace": {"repo": "org/model", "sizeGiB": 10}},
    }
    path.write_text(
        "# a gang whose worker cannot find its leader\n"
        + yaml.safe_dump_all([doc, cache], sort_keys=False)
    )
    code = main([verb, str(path), str(fleet)])
    out, err = capsys.readouterr()
    assert code == 0
    lines = [line for line in err.splitlines() if ": warning: " in line]
    assert lines == [
        f"{path}:2: ModelDeployment ml-team/d: {WORKER_PATH}: warning: engine big: no container "
        "of the Worker references $(MODELPLANE_LEADER_ADDRESS): its pods cannot find the "
        "leader, so the gang never forms and the serving pod never becomes ready"
    ]
    assert "warning" not in out


def test_an_invalid_document_gets_its_error_and_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = copy.deepcopy(gang(["--headless"]))
    doc["spec"]["replicas"] = -1
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(path)]) == 1
    _, err = capsys.readouterr()
    assert "spec.replicas" in err and "warning" not in err


# --- vLLM's image must match the member's accelerator, from vllm-project/vllm:
# docs/deployment/docker.md (CUDA), docs/getting_started/installation/gpu.rocm.inc.md and
# docs/getting_started/installation/cpu.md (their pre-built images)


def _on(driver: str, image: str) -> dict[str, Any]:
    member = _member("Standalone", {"name": "engine", "image": image})
    member["nodeSelector"]["devices"][0]["selectors"] = [{"cel": f'device.driver == "{driver}"'}]
    return _deployment([{"name": "e", "members": [member]}])


IMAGE_PATH = "spec.template.spec.engines[0].members[0].template.spec.containers[0].image"


@pytest.mark.parametrize(
    ("driver", "image", "built_for", "wanted"),
    [
        ("gpu.amd.com", "vllm/vllm-openai:v0.23.0", "NVIDIA", "vllm/vllm-openai-rocm"),
        ("gpu.amd.com", "docker.io/vllm/vllm-openai-cpu:v0.23.0", "CPU", "vllm/vllm-openai-rocm"),
        ("dra.cpu", "vllm/vllm-openai:v0.23.0", "NVIDIA", "vllm/vllm-openai-cpu"),
        ("dra.cpu", "vllm/vllm-openai-rocm:v0.23.0", "AMD", "vllm/vllm-openai-cpu"),
        ("gpu.nvidia.com", "vllm/vllm-openai-rocm@sha256:" + "0" * 64, "AMD", "vllm/vllm-openai"),
    ],
)
def test_a_vllm_image_for_another_accelerator_warns(
    driver: str, image: str, built_for: str, wanted: str
) -> None:
    (warning,) = serving_warnings(ModelDeployment.model_validate(_on(driver, image)))
    assert warning.path == IMAGE_PATH
    assert f"vLLM's {built_for} image" in warning.message
    assert warning.message.endswith(f"vLLM's image for them is {wanted}")


@pytest.mark.parametrize(
    ("driver", "image"),
    [
        ("gpu.amd.com", "vllm/vllm-openai-rocm:v0.23.0"),
        ("gpu.amd.com", "rocm/vllm:latest"),  # AMD's own build: not vLLM's, not judged
        ("dra.cpu", "vllm/vllm-openai-cpu:v0.23.0-x86_64"),
        ("gpu.nvidia.com", "vllm/vllm-openai:v0.23.0"),
        ("gpu.example.com", "vllm/vllm-openai-rocm:v0.23.0"),  # a driver we do not know
    ],
)
def test_the_matching_image_or_an_unknown_one_is_silent(driver: str, image: str) -> None:
    assert serving_warnings(ModelDeployment.model_validate(_on(driver, image))) == []


def test_a_member_naming_two_accelerators_is_silent() -> None:
    doc = _on("gpu.amd.com", "vllm/vllm-openai:v0.23.0")
    selectors = doc["spec"]["template"]["spec"]["engines"][0]["members"][0]["nodeSelector"]
    selectors["devices"][0]["selectors"].append({"cel": 'device.driver != "gpu.nvidia.com"'})
    assert serving_warnings(ModelDeployment.model_validate(doc)) == []
