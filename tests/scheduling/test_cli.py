"""`modelplane schedule` (docs/cli.md): JSON shape, table, --explain, exit codes, determinism."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api import KubeModel
from modelplane.cli.main import main

from .builders import (
    cluster,
    deployment,
    engine,
    gpu,
    member,
    pool,
    replica,
    request,
    seed_fleet,
)


def write(path: Path, *objects: KubeModel | dict[str, Any]) -> None:
    docs = [o.to_wire() if isinstance(o, KubeModel) else o for o in objects]
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


@pytest.fixture
def fleet_dir(tmp_path: Path) -> Path:
    write(tmp_path / "fleet.yaml", *seed_fleet())
    write(tmp_path / "deploy.yaml", deployment("qwen3-8b", 2))
    return tmp_path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["schedule", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_shape(fleet_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, str(fleet_dir), "-o", "json")
    assert code == 0
    doc = json.loads(out)
    (dep,) = doc["deployments"]
    assert list(dep) == ["namespace", "name", "desired", "replicas", "conditions"]
    assert (dep["namespace"], dep["name"], dep["desired"]) == ("ml-team", "qwen3-8b", 2)
    assert dep["replicas"][0] == {
        "name": "qwen3-8b-e7f0a",
        "cluster": "us-east-1",
        "index": 0,
        "retained": False,
        "engines": [
            {
                "name": "qwen3-8b",
                "members": [
                    {
                        "role": "Standalone",
                        "pool": "h100",
                        "nodes": 1,
                        "devices": [
                            {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 1}
                        ],
                    }
                ],
            }
        ],
    }
    assert [r["name"] for r in dep["replicas"]] == ["qwen3-8b-e7f0a", "qwen3-8b-13bc2"]
    assert dep["conditions"] == [
        {"type": "ReplicasScheduled", "status": "False", "reason": "Scheduling", "message": ""},
        {
            "type": "ReplicasReady",
            "status": "False",
            "reason": "ModelStarting",
            "message": "0 of 2 ready",
        },
        {
            "type": "Progressing",
            "status": "True",
            "reason": "RolloutInProgress",
            "message": "2 of 2 replicas updated, 0 ready",
        },
    ]


def test_json_explain(fleet_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, str(fleet_dir), "-o", "json", "--explain")
    (dep,) = json.loads(out)["deployments"]
    assert dep["explain"] == [
        {"cluster": "eu-west-1", "reason": "NotReady", "message": "Ready condition is False"}
    ]


def test_claimless_member_has_no_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        tmp_path / "all.yaml",
        cluster("c1", pool("h100", 1, gpu())),
        deployment("g", 1, engine("g", member("Leader", claimless=True), member("Worker", request("gpu", 1))), cache="c"),
        {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelCache", "metadata": {"name": "c", "namespace": "ml-team"},
         "spec": {"source": "HuggingFace", "huggingFace": {"repo": "r", "sizeGiB": 1}}},
    )  # fmt: skip
    code, out, err = run_cli(capsys, str(tmp_path), "-o", "json")
    assert code == 0, err
    (dep,) = json.loads(out)["deployments"]
    leader = dep["replicas"][0]["engines"][0]["members"][0]
    assert (leader["nodes"], leader["devices"]) == (0, [])
    assert dep["conditions"][0] == {
        "type": "ModelCacheResolved",
        "status": "True",
        "reason": "ModelCacheResolved",
        "message": "",
    }


def test_table(fleet_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, str(fleet_dir))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "DEPLOYMENT",
        "REPLICA",
        "CLUSTER",
        "INDEX",
        "STATE",
        "ENGINE/MEMBER",
        "->",
        "POOL",
    ]
    assert lines[1].split() == [
        "ml-team/qwen3-8b",
        "qwen3-8b-e7f0a",
        "us-east-1",
        "0",
        "new",
        "qwen3-8b/Standalone",
        "->",
        "h100",
    ]
    # Aligned: every column starts at the same offset on every row.
    assert lines[0].index("CLUSTER") == lines[1].index("us-east-1") == lines[2].index("us-west-2")
    assert "explain" not in out
    _, explained, _ = run_cli(capsys, str(fleet_dir), "--explain")
    assert "eu-west-1  NotReady  Ready condition is False" in explained


def test_retained_and_deterministic(fleet_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(fleet_dir / "observed.yaml", replica("qwen3-8b", "us-east-1", 0, ready=True))
    first = run_cli(capsys, str(fleet_dir), "-o", "json", "--explain")
    second = run_cli(capsys, str(fleet_dir), "-o", "json", "--explain")
    assert first == second
    (dep,) = json.loads(first[1])["deployments"]
    assert [r["retained"] for r in dep["replicas"]] == [True, False]
    assert dep["conditions"][0]["reason"] == "ReplicasCreated"


def test_invalid_input_exits_1_with_validate_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = deployment("chat").to_wire()
    bad["spec"]["replicas"] = 101
    write(tmp_path / "bad.yaml", bad)
    code, out, err = run_cli(capsys, str(tmp_path))
    assert code == 1 and out == ""
    assert "bad.yaml:1: ModelDeployment ml-team/chat: spec.replicas:" in err


def test_missing_path_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, str(tmp_path / "nope"))
    assert code == 2 and "error" in err


def test_help_has_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["schedule", "--help"])
    assert exc.value.code == 0
    assert "modelplane schedule examples/" in capsys.readouterr().out


def test_no_deployments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "fleet.yaml", cluster("c1", pool("h100", 1, gpu())))
    code, out, _ = run_cli(capsys, str(tmp_path), "-o", "json")
    assert code == 0 and json.loads(out) == {"deployments": []}
