"""`fleet` shows a cluster whose serving stack is not ready: table, JSON and picture
(docs/fleet.md, "What `fleet` shows")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modelplane.cli.main import main
from tests.builders import (
    cluster_status,
    gpu_device,
    gpu_pool,
    inference_cluster,
    stack_component,
    stack_status,
)
from tests.fleetview.helpers import example_cluster, write

INSTALLING = stack_status(
    "Installing",
    stack_component("lws", "v0.10.0", "Installing"),
    stack_component("nvidia-dra-driver", "25.12.0", "Ready"),
)


def _fleet(tmp_path: Path) -> str:
    pools = [gpu_pool("h100", 1, gpu_device())]
    return write(
        tmp_path / "fleet.yaml",
        inference_cluster("a", status=cluster_status(pools=pools, stack=INSTALLING)),
        inference_cluster(
            "b", status=cluster_status(pools=pools, stack=stack_status("RequirementsMet"))
        ),
        example_cluster("us-east-1"),  # publishes no status.stack
    )


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(["fleet", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_json_carries_the_stack_phase_and_why_it_takes_no_replica(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(_run(capsys, _fleet(tmp_path), "-o", "json"))
    clusters = {c["name"]: c for c in doc["clusters"]}
    assert {n: (c["stackPhase"], c["stackMessage"]) for n, c in clusters.items()} == {
        "a": ("Installing", "serving stack Installing: lws v0.10.0 Installing"),
        "b": ("RequirementsMet", None),
        "us-east-1": (None, None),
    }
    # Additive: the fields before them are unchanged.
    assert list(clusters["a"])[:4] == ["name", "ready", "stack", "taints"]


def test_the_table_says_it_under_the_cluster_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _run(capsys, _fleet(tmp_path)).splitlines()
    header = lines.index("cluster a  Ready=True  stack=Standard  taints: none")
    assert (
        lines[header + 1] == "  no new replicas: serving stack Installing: lws v0.10.0 Installing"
    )
    assert sum("no new replicas" in line for line in lines) == 1


def test_the_picture_marks_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = _run(capsys, _fleet(tmp_path), "-o", "html")
    assert '<div class="cluster notready" data-cluster="a">' in page
    assert '<div class="cluster" data-cluster="b">' in page
    assert "no new replicas: serving stack Installing: lws v0.10.0 Installing" in page
