"""render with a forked child composing and writing most of the clusters while this
process reconciles the deployments (cli/render.py ``_printed``): the same output and
summary as this process alone, however the child fares, and no child left behind."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import pytest
import yaml

from modelplane.cli import emit
from modelplane.cli import render as render_cli
from modelplane.cli.inputs import fleet_of
from modelplane.cli.main import main
from modelplane.manifests import load
from modelplane.runtime.local.render import clusters_placed, render, render_clusters
from tests.builders import inference_cluster
from tests.forking import counted_forks
from tests.paths import EXAMPLES, REPO

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="render forks a child on Linux only"
)

# examples/ (three clusters, GKE, Existing and Provided, with deployments, caches,
# endpoints and fronts) and demo/ (one cluster: all of it the child's).
INPUTS = [str(EXAMPLES), str(REPO / "demo")]


def _render(
    path: str, output: str, fork_from: int, monkeypatch: Any, capsys: Any
) -> tuple[str, str]:
    monkeypatch.setattr(render_cli, "FORK_FROM", fork_from)
    assert main(["render", path, "-o", output]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


@pytest.mark.parametrize("output", ["yaml", "json"])
@pytest.mark.parametrize("path", INPUTS)
def test_render_with_a_child_prints_what_it_prints_alone(
    path: str, output: str, monkeypatch: Any, capsys: Any
) -> None:
    alone = _render(path, output, 10**9, monkeypatch, capsys)
    forks = counted_forks(monkeypatch)
    assert _render(path, output, 1, monkeypatch, capsys) == alone
    assert len(forks) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # reaped: no child is left behind


@pytest.mark.parametrize("how", ["raises", "is killed", "answers garbage"])
@pytest.mark.parametrize("output", ["yaml", "json"])
def test_a_child_that_fails_leaves_its_clusters_to_this_process(
    how: str, output: str, monkeypatch: Any, capsys: Any
) -> None:
    alone = _render(str(EXAMPLES), output, 10**9, monkeypatch, capsys)
    parent = os.getpid()
    real_compose, real_summary = render_cli.render_clusters, render_cli._clusters_summary

    def compose(*args: Any) -> Any:
        if os.getpid() != parent and how == "raises":
            raise RuntimeError("only in the child")
        if os.getpid() != parent and how == "is killed":
            os.kill(os.getpid(), signal.SIGKILL)
        return real_compose(*args)

    def summary(clusters: Any) -> Any:
        if os.getpid() != parent and how == "answers garbage":
            return 5
        return real_summary(clusters)

    monkeypatch.setattr(render_cli, "render_clusters", compose)
    monkeypatch.setattr(render_cli, "_clusters_summary", summary)
    forks = counted_forks(monkeypatch)
    assert _render(str(EXAMPLES), output, 1, monkeypatch, capsys) == alone
    assert len(forks) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_an_error_in_the_childs_clusters_is_this_process_error(
    monkeypatch: Any, capsys: Any
) -> None:
    """The child's failure is not reported: this process composes the child's clusters and
    fails the same way it fails alone."""
    real_compose = render_cli.render_clusters

    def compose(fleet: Any, rendered: Any, only: Any = None) -> Any:
        if only is not None and any(c.metadata.name == "us-east-1" for c in only):
            raise RuntimeError("us-east-1 cannot compose")
        return real_compose(fleet, rendered, only)

    monkeypatch.setattr(render_cli, "render_clusters", compose)
    monkeypatch.setattr(render_cli, "FORK_FROM", 1)
    with pytest.raises(RuntimeError, match="us-east-1 cannot compose"):
        main(["render", str(EXAMPLES)])
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_only_the_clusters_a_deployment_places_on_compose_differently_with_it() -> None:
    """What lets the child compose before the deployments are reconciled: every cluster
    composes the same without them, except those clusters_placed names (their team
    namespaces join), and the examples have both kinds."""
    loaded = load([str(EXAMPLES)])
    fleet = fleet_of(loaded)
    rendered = render(fleet)
    placed = clusters_placed(rendered)
    assert placed and placed != {c.metadata.name for c in fleet.clusters}
    for cluster in fleet.clusters:
        with_them = render_clusters(fleet, rendered, [cluster])[0]
        without = render_clusters(fleet, (), [cluster])[0]
        same = list(with_them.in_order()) == list(without.in_order())
        assert same == (cluster.metadata.name not in placed)


def test_a_child_cluster_that_ends_the_stream_is_written_as_its_end(
    tmp_path: Any, monkeypatch: Any, capsys: Any
) -> None:
    """With nothing after the clusters, the child's last cluster, written as followed by
    more, ends the YAML stream as it does alone, also where PyYAML writes every document
    (its stream end differs only after a scalar document; objects are mappings)."""
    fleet = tmp_path / "clusters.yaml"
    fleet.write_text(yaml.safe_dump_all([inference_cluster(f"c-{i}") for i in range(3)]))
    monkeypatch.setattr(emit, "_yaml_document", lambda document, tokens: None)
    alone = _render(str(fleet), "yaml", 10**9, monkeypatch, capsys)
    forks = counted_forks(monkeypatch)
    assert _render(str(fleet), "yaml", 1, monkeypatch, capsys) == alone
    assert len(forks) == 1 and alone[0]
