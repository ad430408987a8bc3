"""`modelplane render` as a user runs it: files in, a stable stream out (docs/cli.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from modelplane.api import ModelCache
from modelplane.cli.main import main
from modelplane.composition.cache import owner_part
from tests.builders import GKE_MANAGED_KINDS
from tests.paths import REPO

EXAMPLES = REPO / "examples"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_render_examples_is_byte_identical_on_a_rerun(capsys: pytest.CaptureFixture[str]) -> None:
    code, first, err = run(capsys, "render", str(EXAMPLES))
    assert code == 0, err
    _, second, _ = run(capsys, "render", str(EXAMPLES))
    assert first == second
    objects = list(yaml.safe_load_all(first))
    kinds = [o["kind"] for o in objects]
    assert kinds[0] == "ModelDeployment"
    assert "ModelReplica" in kinds and "Object" in kinds
    assert "ml-team/qwen3-8b" in err  # the summary names each deployment


def test_json_output_is_one_array_in_the_yaml_order(capsys: pytest.CaptureFixture[str]) -> None:
    _, as_yaml, _ = run(capsys, "render", str(EXAMPLES))
    _, as_json, _ = run(capsys, "render", str(EXAMPLES), "-o", "json")
    assert json.loads(as_json) == list(yaml.safe_load_all(as_yaml))


def test_out_dir_splits_control_plane_and_clusters(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, streamed, _ = run(capsys, "render", str(EXAMPLES))
    code, out, _ = run(capsys, "render", str(EXAMPLES), "--out", str(tmp_path / "out"))
    assert code == 0 and out == ""
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files[0] == "cluster-" + files[0].removeprefix("cluster-")
    assert "control-plane.yaml" in files
    control = list(yaml.safe_load_all((tmp_path / "out" / "control-plane.yaml").read_text()))
    assert {o["kind"] for o in control} <= {
        "ModelDeployment",
        "ModelReplica",
        "Usage",
        "ModelEndpoint",
        "ModelCache",
        # Endpoint backends, the front door and the services' routes
        "Service",
        "EndpointSlice",
        "BackendTLSPolicy",
        "InferenceGateway",
        "Gateway",
        "ModelService",
        "HTTPRoute",
    }
    remote = [
        o
        for f in files
        if f.startswith("cluster-")
        for o in yaml.safe_load_all((tmp_path / "out" / f).read_text())
    ]
    # Everything composed for a cluster: what its source provisioned (GKE's managed resources),
    # its provider configs, stack and Usages, and Objects.
    assert {o["kind"] for o in remote} == {
        "ClusterProviderConfig",
        "Release",
        "Usage",
        "Object",
        *GKE_MANAGED_KINDS,
    }
    # Every cluster has a file, with or without replicas (ap-south-1 takes none).
    assert {f"cluster-{c}.yaml" for c in ("ap-south-1", "eu-west-1", "us-east-1")} <= set(files)
    assert len(control) + len(remote) == len(list(yaml.safe_load_all(streamed)))


def test_render_output_feeds_back_as_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Render, mark every replica Ready, render again: stable placement, endpoints appear."""
    _, first, _ = run(capsys, "render", str(EXAMPLES))
    fed = []
    for obj in yaml.safe_load_all(first):
        if not obj["apiVersion"].startswith("modelplane.ai/"):
            continue  # not an input kind (docs/cli.md)
        if obj["kind"] == "ModelReplica":
            obj["status"] = {
                "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]
            }
        if obj["kind"] in ("ModelDeployment", "ModelCache"):
            continue  # the input deployments and caches are read from examples/
        fed.append(obj)
    observed_dir = tmp_path / "observed"
    observed_dir.mkdir()
    (observed_dir / "observed.yaml").write_text(yaml.safe_dump_all(fed))
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    code, second, err = run(capsys, "render", str(tmp_path / "examples"), str(observed_dir))
    assert code == 0, err
    before = [
        o["metadata"]["name"] for o in yaml.safe_load_all(first) if o["kind"] == "ModelReplica"
    ]
    after_objects = list(yaml.safe_load_all(second))
    after = [o["metadata"]["name"] for o in after_objects if o["kind"] == "ModelReplica"]
    assert before == after
    endpoints = [o["metadata"]["name"] for o in after_objects if o["kind"] == "ModelEndpoint"]
    assert endpoints and set(endpoints) <= set(after)


def test_invalid_input_exits_1_with_located_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: modelplane.ai/v1alpha1\nkind: ModelDeployment\nmetadata: {name: x}\nspec: {replicas: 101}\n"
    )
    code, out, err = run(capsys, "render", str(bad))
    assert code == 1 and out == ""
    assert err.startswith(f"{bad}:1: ModelDeployment default/x: spec.replicas: ")


def test_missing_path_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "render", str(tmp_path / "nope"))
    assert code == 2
    assert "Traceback" not in err


def test_the_llama_405b_cache_is_staged_after_the_deployments(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The example cache: printed last, one PVC and the Job's owner per production cluster.

    A fresh render is the first reconcile: the Job follows once its owner's UID is observed,
    and no token Object exists at all (the Job reads the cluster's own Secret).
    """
    code, out, err = run(capsys, "render", str(EXAMPLES))
    assert code == 0, err
    objects = list(yaml.safe_load_all(out))
    kinds = [o["kind"] for o in objects]
    at = kinds.index("ModelCache")
    assert "ModelDeployment" not in kinds[at:] and "ModelEndpoint" not in kinds[at:]
    cache, usages = objects[at], objects[at + 1 : at + 3]
    staged = objects[at + 3 :]
    assert (cache["metadata"]["namespace"], cache["metadata"]["name"]) == ("ml-team", "llama-405b")
    # Right after the cache, the Usage of each cluster it stages on (neither can be deleted).
    assert [(u["kind"], u["spec"]["of"]["resourceRef"]) for u in usages] == [
        ("Usage", {"name": "eu-west-1", "namespace": ""}),
        ("Usage", {"name": "us-east-1", "namespace": ""}),
    ]
    assert {u["spec"]["by"]["kind"] for u in usages} == {"ModelCache"}
    parts = [
        (
            o["metadata"]["annotations"]["crossplane.io/composition-resource-name"],
            o["spec"]["forProvider"]["manifest"]["kind"],
        )
        for o in staged
    ]
    owner = "cache-" + owner_part(ModelCache.model_validate(cache).spec.hugging_face)  # type: ignore[arg-type]
    assert parts == [
        ("cache-pvc-eu-west-1", "PersistentVolumeClaim"),
        (f"{owner}-eu-west-1", "ConfigMap"),
        ("cache-pvc-us-east-1", "PersistentVolumeClaim"),
        (f"{owner}-us-east-1", "ConfigMap"),
    ]
    classes = [
        o["spec"]["forProvider"]["manifest"]["spec"]["storageClassName"]
        for o in staged
        if o["spec"]["forProvider"]["manifest"]["kind"] == "PersistentVolumeClaim"
    ]
    assert classes == ["cephfs", "modelplane-rwx"]  # spec.cluster.existing.cache, status.cache
    assert cache["status"]["summary"] == {"ready": "0/2"}
    assert [c["phase"] for c in cache["status"]["clusters"]] == ["Pending", "Pending"]
    # The PVC is the claim the llama-405b gang pods mount (every pod of every replica).
    pvc = staged[0]["spec"]["forProvider"]["manifest"]["metadata"]["name"]
    workloads = [
        o["spec"]["forProvider"]["manifest"]
        for o in objects[:at]
        if o["kind"] == "Object"
        and o["metadata"].get("annotations", {}).get("crossplane.io/composition-resource-name")
        == "model-serving-llama-405b"
    ]
    assert {w["kind"] for w in workloads} == {"LeaderWorkerSet", "PodCliqueSet"}
    claims = {claim for w in workloads for claim in _claim_names(w)}
    assert claims == {pvc}
    assert "ml-team/llama-405b (ModelCache): 4 objects, 0/2 clusters staged" in err


def _claim_names(node: object) -> list[str]:
    """Every persistentVolumeClaim.claimName anywhere in a manifest."""
    if isinstance(node, dict):
        found = (
            [node["persistentVolumeClaim"]["claimName"]] if "persistentVolumeClaim" in node else []
        )
        return found + [c for v in node.values() for c in _claim_names(v)]
    if isinstance(node, list):
        return [c for v in node for c in _claim_names(v)]
    return []


def test_a_staged_cache_fed_back_keeps_only_its_pvcs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The rendered cache with every cluster Ready, fed back: Staged, no Job, no token."""
    _, first, _ = run(capsys, "render", str(EXAMPLES))
    [cache] = [o for o in yaml.safe_load_all(first) if o["kind"] == "ModelCache"]
    for entry in cache["status"]["clusters"]:
        entry["phase"] = "Ready"
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    llama = tmp_path / "examples" / "deployments" / "llama-405b.yaml"
    docs = [d for d in yaml.safe_load_all(llama.read_text()) if d and d["kind"] != "ModelCache"]
    llama.write_text(yaml.safe_dump_all([cache, *docs]))
    code, second, err = run(capsys, "render", str(tmp_path / "examples"))
    assert code == 0, err
    objects = list(yaml.safe_load_all(second))
    at = [o["kind"] for o in objects].index("ModelCache")
    staged = objects[at]
    assert staged["status"]["summary"] == {"ready": "2/2"}
    assert staged["status"]["conditions"][1]["reason"] == "Staged"
    # The weights stay on both clusters, and so do their Usages.
    assert [o["kind"] for o in objects[at + 1 : at + 3]] == ["Usage", "Usage"]
    assert [o["spec"]["forProvider"]["manifest"]["kind"] for o in objects[at + 3 :]] == [
        "PersistentVolumeClaim",
        "PersistentVolumeClaim",
    ]


def test_each_replica_is_printed_with_its_usage_right_after_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(capsys, "render", str(EXAMPLES))
    objects = list(yaml.safe_load_all(out))
    replicas = [i for i, o in enumerate(objects) if o["kind"] == "ModelReplica"]
    assert replicas
    for at in replicas:
        replica, usage = objects[at], objects[at + 1]
        assert usage["kind"] == "Usage"
        assert usage["metadata"]["name"] == replica["metadata"]["name"]
        assert usage["metadata"]["namespace"] == replica["metadata"]["namespace"]
        assert usage["spec"]["by"] == {
            "apiVersion": "modelplane.ai/v1alpha1",
            "kind": "ModelReplica",
            "resourceRef": {"name": replica["metadata"]["name"]},
        }
        assert usage["spec"]["of"]["resourceRef"] == {
            "name": replica["spec"]["clusterName"],
            "namespace": "",
        }


def test_a_fed_back_usage_is_refused_as_an_object_is(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Neither is an input kind (docs/cli.md): each is a located error, never skipped."""
    _, first, _ = run(capsys, "render", str(EXAMPLES))
    objects = list(yaml.safe_load_all(first))
    fed = [next(o for o in objects if o["kind"] == kind) for kind in ("Object", "Usage")]
    back = tmp_path / "back.yaml"
    back.write_text(yaml.safe_dump_all(fed))
    code, out, err = run(capsys, "render", str(back))
    assert code == 1 and out == ""
    lines = err.splitlines()
    for obj in fed:
        prefix = f"{back}:"
        ident = f"{obj['kind']} {obj['metadata']['name']}: "
        assert any(
            line.startswith(prefix) and f" {ident}kind: Unsupported value: " in line
            for line in lines
        ), (obj["kind"], err)
