"""`plan` is the reconcile `render` runs: round by round, the same placements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modelplane.cli.main import main
from modelplane.fleetview.changes import ChangeError, Changes, Removal
from modelplane.fleetview.plan import changed_inputs, plan, settled
from modelplane.fleetview.state import settled_replicas
from modelplane.manifests import load
from tests.fleetview.helpers import (
    changed_examples,
    drained,
    example_fleet,
    rendered_replicas,
    scaled_qwen,
    write,
)
from tests.paths import EXAMPLES


def _changes(path: str) -> Changes:
    return Changes(tuple(o.model for o in load([path]).objects))


def _placements(state_running: object) -> dict[str, tuple[str, tuple[str, ...]]]:
    out = {}
    for r in state_running:  # type: ignore[attr-defined]
        pools = tuple(sorted({m.node_pool_name for e in r.replica.spec.engines for m in e.members}))
        out[r.name] = (r.cluster, pools)
    return out


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda: drained("us-east-1"), id="drain us-east-1"),
        pytest.param(lambda: drained("eu-west-1"), id="drain eu-west-1"),
        pytest.param(lambda: scaled_qwen(6), id="scale qwen3-8b to 6"),
        pytest.param(lambda: scaled_qwen(1), id="scale qwen3-8b to 1"),
    ],
)
def test_every_round_places_what_render_places(
    change: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = change()  # type: ignore[operator]
    change_file = write(tmp_path / "change.yaml", doc)
    edited = changed_examples(tmp_path / "edited", doc)
    inputs = example_fleet()
    result = plan(inputs, _changes(change_file))
    previous = settled_replicas(settled(inputs))
    for number, state in enumerate(result.rounds, 1):
        observed = write(tmp_path / f"observed-{number}.yaml", *[r.to_wire() for r in previous])
        paths = [edited, observed]
        assert rendered_replicas(capsys, *paths) == _placements(
            r for r in state.running if r.deployment
        ), f"round {number}"
        previous = settled_replicas(state)


def test_a_drain_moves_make_before_break_where_render_lands_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change_file = write(tmp_path / "drain.yaml", drained("us-east-1"))
    inputs = example_fleet()
    result = plan(inputs, _changes(change_file))
    moved = {(m.replica, m.cluster, m.cause, m.replacement, m.replacement_cluster)
             for m in result.moves}  # fmt: skip
    assert moved == {
        ("ml-team/qwen3-8b-e7f0a", "us-east-1", "ClusterDraining", "ml-team/qwen3-8b-f01e0",
         "eu-west-1"),
        # No H100 node pair is free elsewhere: it keeps serving where it is.
        ("ml-team/llama-405b-9a2d8", "us-east-1", "ClusterDraining", "", ""),
    }  # fmt: skip
    # render of the drained fleet, observing the settled replicas, emits the replacement
    # beside the replica it replaces: both run until the replacement is Ready.
    before = settled_replicas(settled(inputs))
    observed = write(tmp_path / "observed.yaml", *[r.to_wire() for r in before])
    edited = changed_examples(tmp_path / "edited", drained("us-east-1"))
    rendered = rendered_replicas(capsys, edited, observed)
    assert rendered["ml-team/qwen3-8b-f01e0"] == ("eu-west-1", ("h100",))
    assert rendered["ml-team/qwen3-8b-e7f0a"] == ("us-east-1", ("h100",))
    for m in result.moves:
        if m.replacement:
            assert rendered[m.replacement] == (m.replacement_cluster, m.replacement_pools)
    assert [p.replica for p in result.placed] == ["ml-team/qwen3-8b-f01e0"]
    assert [u.deployment for u in result.unplaced] == ["ml-team/llama-405b"]
    reasons = {e.cluster: e.reason for e in result.unplaced[0].explain}
    assert reasons == {
        "ap-south-1": "ClusterSelectorMismatch",
        "eu-west-1": "InsufficientCapacity",
        "us-east-1": "Tainted",
    }


def test_removing_a_cluster_re_places_its_replicas_without_a_move() -> None:
    inputs = example_fleet()
    result = plan(inputs, Changes(removals=(Removal.parse("InferenceCluster/us-east-1"),)))
    assert result.moves == ()
    assert {(x.replica, x.why) for x in result.removed} == {
        ("ml-team/llama-405b-9a2d8", "its cluster is removed"),
        ("ml-team/qwen3-8b-e7f0a", "its cluster is removed"),
    }
    assert all(p.cluster != "us-east-1" for p in result.placed)


def test_removing_a_deployment_frees_its_devices() -> None:
    inputs = example_fleet()
    result = plan(inputs, Changes(removals=(Removal.parse("ModelDeployment/ml-team/llama-405b"),)))
    assert sorted(x.replica for x in result.removed) == [
        "ml-team/llama-405b-7e27e",
        "ml-team/llama-405b-9a2d8",
    ]
    assert sum(d.used for d in result.after_capacity.devices) == 40 - 32


def test_no_change_changes_nothing() -> None:
    result = plan(example_fleet(), Changes())
    assert (result.moves, result.placed, result.removed, result.unplaced) == ((), (), (), ())
    assert result.settled and len(result.rounds) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Pod/x", "the kind must be one of"),
        ("InferenceCluster/a/b", "is written Kind/name"),
        ("ModelDeployment/", "is written Kind/[namespace/]name"),
    ],
)
def test_a_removal_is_read_or_refused_with_its_form(text: str, message: str) -> None:
    with pytest.raises(ChangeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Removal.parse(text)


def test_a_removal_of_nothing_is_refused() -> None:
    inputs = example_fleet()
    with pytest.raises(ChangeError, match="no such object"):
        changed_inputs(
            inputs, settled(inputs), Changes(removals=(Removal.parse("InferenceCluster/nope"),))
        )


def test_plan_cli_json_and_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change = write(tmp_path / "drain.yaml", drained("us-east-1"))
    fit_file = str(EXAMPLES / "deployments" / "qwen3-8b.yaml")
    code = main(["plan", str(EXAMPLES), "--change", change, "--fit", fit_file, "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert [m["replica"] for m in doc["moves"]] == [
        "ml-team/qwen3-8b-e7f0a",
        "ml-team/llama-405b-9a2d8",
    ]
    assert doc["fit"]["more"] == 8
    assert doc["fit"]["where"] == [{"cluster": "eu-west-1", "pools": ["h100"], "replicas": 8}]


def test_fit_packs_as_the_scheduler_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fit says 30 more fit beside the 2 running: scaling to 32 places all of them.
    code = main(["plan", str(EXAMPLES), "--fit", str(EXAMPLES / "deployments/qwen3-8b.yaml"),
                 "-o", "json"])  # fmt: skip
    doc = json.loads(capsys.readouterr()[0])
    assert code == 0 and doc["fit"]["more"] == 30
    change = write(tmp_path / "x32.yaml", scaled_qwen(32))
    main(["plan", str(EXAMPLES), "--change", change, "-o", "json"])
    scaled = json.loads(capsys.readouterr()[0])
    assert len(scaled["placed"]) == 30 and scaled["unplaced"] == []
    change = write(tmp_path / "x33.yaml", scaled_qwen(33))
    main(["plan", str(EXAMPLES), "--change", change, "-o", "json"])
    assert json.loads(capsys.readouterr()[0])["unplaced"][0]["placed"] == 32


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--remove", "Pod/x"], "--remove Pod/x: the kind must be one of"),
        (["--remove", "InferenceCluster/nope"], "InferenceCluster/nope: the input has no such"),
        (["--fit", str(EXAMPLES / "fleet")], "must hold exactly one ModelDeployment"),
    ],
)
def test_bad_changes_are_located_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["plan", str(EXAMPLES), *argv])
    _, err = capsys.readouterr()
    assert code == 1 and message in err and "Traceback" not in err
