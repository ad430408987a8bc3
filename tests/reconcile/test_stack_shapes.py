"""render's shared stack skeletons (reconcile/cluster.py ``converged_stack``'s ``settled``,
runtime/local/render.py ``StackShapes``, reconcile/stack.py ``stamp_stack``): a cluster
given the names in an earlier cluster's skeleton gets the stack it composes round by round
on its own."""

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


def _variant(
    template: dict[str, Any],
    name: str,
    labels: dict[str, str],
    secret: str,
    identity: bool,
    stack: str | None,
    tls: bool,
    managed: bool,
    pools: list[str] | None,
) -> InferenceCluster:
    """``template`` changed in the ways clusters of one fleet differ: their name, labels,
    kubeconfig Secret and identity, stack, gateway TLS, who brings the stack, and pools
    (None: as the template has them; a list: node pools of these classes, none published)."""
    doc = copy.deepcopy(template)
    doc["metadata"]["name"] = name
    doc["metadata"]["labels"] = labels
    spec = doc["spec"]
    existing = spec["cluster"].get("existing")
    if existing is not None:
        existing["secretRef"] = {"name": secret}
        if identity:
            existing["identitySecretRef"] = {"name": f"{secret}-identity"}
        if not managed:
            existing["components"] = "Provided"
            doc.get("status", {}).pop("providerConfigRef", None)
        elif tls:
            spec["gateway"] = {
                "tls": {"hostname": f"{name}.example.com", "certificateRef": {"name": "tls"}}
            }
    if stack is not None:
        spec["stack"] = stack
    if pools is not None:
        spec["nodePools"] = [
            {"name": f"p{i}", "className": c, "nodeCount": 1} for i, c in enumerate(pools)
        ]
        doc.get("status", {}).pop("gpuPools", None)
    return InferenceCluster.model_validate(doc)


# What the clusters of one shape share (template, stack, TLS, who brings the stack, pools),
# then what each cluster has of its own (name, labels, kubeconfig Secret, identity).
_SHAPES = st.tuples(
    st.sampled_from(TEMPLATES),
    st.sampled_from([None, "Standard", "Dynamo"]),
    st.booleans(),
    st.booleans(),
    st.none() | st.lists(st.sampled_from(sorted(CLASSES)), min_size=1, max_size=2),
)
_OWN = st.tuples(
    st.integers(min_value=0, max_value=2),
    st.from_regex(r"[a-z][a-z0-9-]{0,30}[a-z0-9]", fullmatch=True),
    st.dictionaries(st.sampled_from(["region", "tier"]), st.sampled_from(["a", "b"])),
    st.sampled_from(["kubeconfig", "other-kubeconfig"]),
    st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_SHAPES, min_size=1, max_size=3), st.lists(_OWN, min_size=1, max_size=8))
def test_shared_skeletons_compose_what_each_cluster_composes_alone(
    shapes_drawn: list[tuple[dict[str, Any], str | None, bool, bool, list[str] | None]],
    clusters: list[tuple[int, str, dict[str, str], str, bool]],
) -> None:
    shapes = StackShapes()
    for index, name, labels, secret, identity in clusters:
        template, stack, tls, managed, pools = shapes_drawn[index % len(shapes_drawn)]
        cluster = _variant(template, name, labels, secret, identity, stack, tls, managed, pools)
        assert _stack(cluster, shapes) == _stack(cluster, None)


def test_every_template_shares_its_skeleton_with_a_cluster_planned_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shapes = StackShapes()
    for template in TEMPLATES:
        _stack(_named(template, "first"), shapes)
    alone = [_stack(_named(t, "second-cluster"), None) for t in TEMPLATES]
    composed: list[str] = []
    stamped: list[str] = []
    skeleton, stamp = cluster_mod.stack_skeleton, cluster_mod.stamp_stack

    def counted_skeleton(*args: Any) -> Any:
        composed.append("skeleton")
        return skeleton(*args)

    def counted_stamp(given: Any, name: str, config: Any) -> Any:
        stamped.append(name)
        return stamp(given, name, config)

    monkeypatch.setattr(cluster_mod, "stack_skeleton", counted_skeleton)
    monkeypatch.setattr(cluster_mod, "stamp_stack", counted_stamp)
    for template, expected in zip(TEMPLATES, alone, strict=True):
        composed.clear()
        stamped.clear()
        shared = _stack(_named(template, "second-cluster"), shapes)
        assert composed == [], template["metadata"]["name"]  # no round composed anew
        assert stamped == ["second-cluster"]
        assert shared == expected


BYO = inference_cluster("byo", labels={"region": "us"})
# (what differs, the second cluster) against BYO composed first: each second cluster's stack
# is the one it composes alone; a name, labels or a provider config alone share BYO's skeleton.
DIFFERENCES = [
    ("name", inference_cluster("other"), True),
    ("labels", inference_cluster("other", labels={"region": "eu", "tier": "research"}), True),
    ("provider config", inference_cluster("other", secret="elsewhere"), True),
    ("stack", inference_cluster("other", stack="Dynamo"), False),
    (
        "pools",
        inference_cluster("other", node_pools=[{"name": "h", "className": "h100-8x"}]),
        False,
    ),
    (
        "tls",
        {
            **inference_cluster("other"),
            "spec": {
                **inference_cluster("other")["spec"],
                "gateway": {
                    "tls": {"hostname": "other.example.com", "certificateRef": {"name": "tls"}}
                },
            },
        },
        False,
    ),
    ("provided", _provided({**inference_cluster("other"), "status": {}}), False),
]


@pytest.mark.parametrize(
    ("second", "shared"),
    [(d, s) for _, d, s in DIFFERENCES],
    ids=[what for what, _, _ in DIFFERENCES],
)
def test_a_cluster_differing_from_the_first_composes_its_own_stack(
    second: dict[str, Any], shared: bool
) -> None:
    shapes = StackShapes()
    first = _stack(InferenceCluster.model_validate(BYO), shapes)
    cluster = InferenceCluster.model_validate(second)
    stack = _stack(cluster, shapes)
    assert stack == _stack(cluster, None)
    assert stack.stack != first.stack  # its own names, at the least
    assert first.shape is not None and stack.shape is not None
    assert (stack.shape[2] is first.shape[2]) == shared
