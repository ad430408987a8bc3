"""render's shared stack rounds (reconcile/cluster.py ``converged_stack``'s ``settled``,
runtime/local/render.py ``StackShapes``): the same stacks as composing every cluster round
by round on its own."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api import InferenceClass, InferenceCluster
from modelplane.api.inferencecluster import derived_gpu_pools
from modelplane.reconcile import cluster as cluster_mod
from modelplane.reconcile.cluster import (
    ConvergedStack,
    converged_provisioning,
    converged_stack,
)
from modelplane.runtime.local.render import StackShapes
from tests.builders import gke_cluster, inference_cluster
from tests.paths import EXAMPLES


def _docs(name: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((EXAMPLES / "fleet" / name).read_text()))


CLASSES = {
    c.metadata.name or "": c
    for c in (InferenceClass.model_validate(d) for d in _docs("inferenceclasses.yaml"))
}


def _provided(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["spec"]["cluster"]["existing"]["components"] = "Provided"
    out["status"].pop("providerConfigRef", None)
    return out


# Every way the examples' clusters get a stack: provisioned on GKE, brought with the stack
# managed or provided, and the builders' bring-your-own and GKE clusters (no status).
_EXAMPLE_CLUSTERS = _docs("inferenceclusters.yaml")
TEMPLATES = [
    *_EXAMPLE_CLUSTERS,
    *(_provided(d) for d in _EXAMPLE_CLUSTERS if d["spec"]["cluster"]["source"] == "Existing"),
    inference_cluster("byo"),
    gke_cluster("gke"),
]


def _named(template: dict[str, Any], name: str) -> InferenceCluster:
    doc = copy.deepcopy(template)
    doc["metadata"]["name"] = name
    return InferenceCluster.model_validate(doc)


def _stack(cluster: InferenceCluster, shapes: StackShapes | None) -> ConvergedStack:
    published = cluster.status.gpu_pools if cluster.status is not None else None
    pools = published or derived_gpu_pools(cluster, CLASSES)
    provisioned = converged_provisioning(cluster, CLASSES)
    if shapes is None:
        return converged_stack(cluster, pools, provisioned)
    stack = converged_stack(cluster, pools, provisioned, shapes.known)
    shapes.remember(stack)
    return stack


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=len(TEMPLATES) - 1),
            st.from_regex(r"[a-z][a-z0-9-]{0,30}[a-z0-9]", fullmatch=True),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_shared_rounds_compose_what_each_cluster_composes_alone(
    clusters: list[tuple[int, str]],
) -> None:
    shapes = StackShapes()
    for index, name in clusters:
        cluster = _named(TEMPLATES[index], name)
        assert _stack(cluster, shapes) == _stack(cluster, None)


def test_every_template_shares_its_rounds_with_a_cluster_planned_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shapes = StackShapes()
    for template in TEMPLATES:
        _stack(_named(template, "first"), shapes)
    alone = [_stack(_named(t, "second-cluster"), None) for t in TEMPLATES]
    rounds: list[str] = []
    original = cluster_mod.compose_stack

    def counted(name: str, *args: Any) -> Any:
        rounds.append(name)
        return original(name, *args)

    monkeypatch.setattr(cluster_mod, "compose_stack", counted)
    for template, expected in zip(TEMPLATES, alone, strict=True):
        rounds.clear()
        shared = _stack(_named(template, "second-cluster"), shapes)
        assert rounds == ["second-cluster"], template["metadata"]["name"]  # one round, not two
        assert shared == expected


def test_keys_not_settled_for_a_cluster_are_composed_round_by_round() -> None:
    cluster = _named(TEMPLATES[0], "c")
    shapes = StackShapes()
    _stack(cluster, shapes)
    mode, plan, keys = shapes.settled[0]
    # A memory that does not fit (a key this cluster never composes) is not taken.
    shapes.settled[0] = (mode, plan, keys | {"stack-not-a-component"})
    assert _stack(cluster, shapes) == _stack(cluster, None)
