"""The functions over gRPC give the same objects as ``modelplane render`` on the same input.

The runtime sees the fleet as the cluster function publishes it (pools derived from the
classes, the provider config reference); ``render`` derives the same values locally
(docs/api.md, "InferenceCluster: what is read and derived"). Deployments are reconciled in
(namespace, name) order, each seeing the
replicas given to the earlier ones, as ``render`` schedules them.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api import InferenceClass, InferenceCluster, ModelReplica
from modelplane.api.inferencecluster import derived_gpu_pools
from modelplane.cli.main import main
from modelplane.composition.replica import cluster_info
from modelplane.naming import CLUSTER_LABEL, DEPLOYMENT_LABEL, cache_usage_key, child_name
from tests.paths import EXAMPLES

from .conftest import NOW_TEXT, Stubs
from .helpers import (
    composite_status,
    conditions,
    desired,
    existing_cluster,
    published_by_function,
    request,
    satisfy,
)

RESOURCE_KEY = "crossplane.io/composition-resource-name"

READY = {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}


def _documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def _render(paths: list[Path]) -> list[dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # The same clock as the function's in these tests (conftest.NOW).
        assert main(["render", "-o", "json", "--now", NOW_TEXT, *map(str, paths)]) == 0
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def _published(cluster: dict[str, Any], classes: dict[str, InferenceClass]) -> dict[str, Any]:
    """The cluster as the runtime reads it: what the cluster function publishes filled in."""
    out = copy.deepcopy(cluster)
    status = out.setdefault("status", {})
    model = InferenceCluster.model_validate(cluster)
    if not status.get("gpuPools"):
        pools = derived_gpu_pools(model, classes)
        if pools is not None:
            status["gpuPools"] = [pool.to_wire() for pool in pools]
    status.setdefault(
        "providerConfigRef",
        {
            "kind": "ClusterProviderConfig",
            "name": child_name(cluster["metadata"]["name"], "cluster-kubeconfig"),
        },
    )
    return out


def _key(obj: dict[str, Any]) -> str:
    labels = obj["metadata"]["labels"]
    kind = {"ModelReplica": "replica", "Usage": "usage"}.get(obj["kind"], "endpoint")
    return f"{kind}-{labels['modelplane.ai/cluster']}-{labels['modelplane.ai/replica-index']}"


def _by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def _objects(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return _by_kind(objects, "Object")


def _unstamped(objects: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The objects with each ModelReplica's ``spec.clusterInfo`` left out."""
    out = copy.deepcopy(objects)
    for obj in out.values():
        if obj["kind"] == "ModelReplica":
            obj["spec"].pop("clusterInfo", None)
    return out


def _run_deployment(
    stubs: Stubs,
    xr: dict[str, Any],
    world: list[dict[str, Any]],
    observed: dict[str, dict[str, Any]],
) -> Any:
    first = stubs.v1.RunFunction(request(xr, observed=observed))
    return stubs.v1.RunFunction(request(xr, observed=observed, required=satisfy(first, world)))


def _run_replica(
    stubs: Stubs, replica: dict[str, Any], world: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    first = stubs.v1.RunFunction(request(replica))
    return desired(stubs.v1.RunFunction(request(replica, required=satisfy(first, world))))


def _compare(
    stubs: Stubs,
    docs: list[dict[str, Any]],
    rendered: list[dict[str, Any]],
    observed_replicas: list[dict[str, Any]],
) -> int:
    classes = {
        d["metadata"]["name"]: InferenceClass.model_validate(d)
        for d in docs
        if d["kind"] == "InferenceClass"
    }
    world = [
        _published(d, classes) if d["kind"] == "InferenceCluster" else d
        for d in docs
        if d["kind"] != "ModelDeployment"
    ]
    world.extend(observed_replicas)
    deployments = sorted(
        _by_kind(docs, "ModelDeployment"),
        key=lambda d: (d["metadata"].get("namespace", "default"), d["metadata"]["name"]),
    )
    compared = 0
    for xr in deployments:
        ns, name = xr["metadata"].get("namespace", "default"), xr["metadata"]["name"]

        def ours(o: dict[str, Any], ns: str = ns, name: str = name) -> bool:
            return (
                o["metadata"]["namespace"] == ns
                and o["metadata"]["labels"].get(DEPLOYMENT_LABEL) == name
            )

        expected_replicas = [o for o in _by_kind(rendered, "ModelReplica") if ours(o)]
        expected_usages = [o for o in _by_kind(rendered, "Usage") if ours(o)]
        assert len(expected_usages) == len(expected_replicas)
        expected_endpoints = [o for o in _by_kind(rendered, "ModelEndpoint") if ours(o)]
        [expected_xr] = [
            o
            for o in _by_kind(rendered, "ModelDeployment")
            if o["metadata"]["name"] == name and o["metadata"]["namespace"] == ns
        ]
        observed = {_key(r): r for r in observed_replicas if ours(r)}
        # Each cluster's occupancy as its function publishes it from the replicas so far;
        # the deployment function reads no other replica.
        published = [
            published_by_function(stubs.v1.RunFunction, o, world)
            if o["kind"] == "InferenceCluster"
            else o
            for o in world
        ]
        rsp = _run_deployment(stubs, xr, published, observed)
        got = desired(rsp)
        # The same objects; each replica stamped with what its cluster publishes here
        # (``_published``), which render's input clusters need not carry (render derives
        # the provider config and pools when it composes).
        assert _unstamped(got) == _unstamped(
            {_key(o): o for o in [*expected_replicas, *expected_usages, *expected_endpoints]}
        )
        by_name = {o["metadata"]["name"]: o for o in published if o["kind"] == "InferenceCluster"}
        for key, obj in got.items():
            if obj["kind"] == "ModelReplica":
                model = ModelReplica.model_validate(obj)
                cluster = InferenceCluster.model_validate(by_name[model.spec.cluster_name])
                assert obj["spec"]["clusterInfo"] == cluster_info(model, cluster).to_wire(), key
        status = dict(composite_status(rsp))
        status["conditions"] = [
            dict(zip(("type", "status", "reason", "message"), c, strict=True))
            for c in conditions(rsp)
        ]
        assert status == expected_xr["status"]
        # What this deployment was given exists before the next one is reconciled.
        world.extend(
            r
            for r in expected_replicas
            if r["metadata"]["name"] not in {o["metadata"]["name"] for o in observed_replicas}
        )
        for replica in expected_replicas:
            # The replica as the deployment function wrote it, stamped.
            objects = _run_replica(stubs, got[_key(replica)], world)
            # Every Object render composed for this replica, not only those the function
            # returned: the function may neither add nor drop one. A composed object's name
            # starts with its replica's (child_name keeps the leading parts).
            prefix = f"{replica['metadata']['name']}-"
            expected = [
                o for o in _by_kind(rendered, "Object") if o["metadata"]["name"].startswith(prefix)
            ]
            assert expected, f"render composed nothing for {replica['metadata']['name']}"
            assert sorted(objects.values(), key=lambda o: o["metadata"]["name"]) == sorted(
                expected, key=lambda o: o["metadata"]["name"]
            )
            compared += len(objects)
    return compared


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="examples/ not present")
def test_fresh_fleet_matches_render(stubs: Stubs) -> None:
    docs = _documents()
    rendered = _render([EXAMPLES])
    assert _by_kind(rendered, "ModelReplica"), "the examples place nothing"
    staged = sum(len(_objects(objects)) for _, objects in _cache_sections(rendered))
    shared = len(_cluster_objects(rendered))
    assert (
        _compare(stubs, docs, rendered, []) == len(_by_kind(rendered, "Object")) - staged - shared
    )


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="examples/ not present")
def test_ready_replicas_match_render(stubs: Stubs, tmp_path: Path) -> None:
    docs = _documents()
    first = _render([EXAMPLES])
    observed = []
    for replica in _by_kind(first, "ModelReplica"):
        ready = copy.deepcopy(replica)
        ready["status"] = READY
        observed.append(ready)
    (tmp_path / "observed.yaml").write_text(yaml.safe_dump_all(observed))
    rendered = _render([EXAMPLES, tmp_path])
    assert _by_kind(rendered, "ModelEndpoint"), "ready replicas should get endpoints"
    staged = sum(len(_objects(objects)) for _, objects in _cache_sections(rendered))
    staged += len(_cluster_objects(rendered))
    # Every Object render printed, bar the cache's staging and the clusters' own objects,
    # came back over gRPC.
    assert _compare(stubs, docs, rendered, observed) == len(_by_kind(rendered, "Object")) - staged
    # Each composed endpoint composes nothing over gRPC, as render prints nothing for it (its
    # services compose its backend on their gateways' clusters), and publishes its backend.
    for endpoint in _by_kind(rendered, "ModelEndpoint"):
        rsp = stubs.v1.RunFunction(request(endpoint))
        assert desired(rsp) == {}
        assert composite_status(rsp)["routing"]["backendName"]


AFTER_CACHES = {
    "Backend",
    "AIServiceBackend",
    "BackendSecurityPolicy",
    "InferenceGateway",
    "Gateway",
    "ModelService",
    "AIGatewayRoute",
    "BackendTrafficPolicy",
}


def _cluster_objects(rendered: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Objects render printed for the clusters (in the system namespace): stack, pickers."""
    return [
        o for o in _by_kind(rendered, "Object") if o["metadata"]["namespace"] == "modelplane-system"
    ]


def _shared(rendered: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pickers' Objects render printed for the clusters, with each team namespace's."""
    return [o for o in _cluster_objects(rendered) if _is_shared(o)]


def _is_shared(obj: dict[str, Any]) -> bool:
    key = obj["metadata"].get("annotations", {}).get(RESOURCE_KEY, "")
    return bool(key.startswith(("epp-", "team-namespace-")))


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="examples/ not present")
def test_shared_objects_match_the_cluster_function(stubs: Stubs) -> None:
    rendered = _render([EXAMPLES])
    shared = _shared(rendered)
    names = sorted(
        {
            o["metadata"]["name"].rsplit("-epp-", 1)[0]
            for o in shared
            if "-epp-" in o["metadata"]["name"]
        }
    )
    assert names, "render printed no shared objects"
    teams = 0
    for name in names:
        cluster = existing_cluster(name)
        # The replicas render placed there: the function composes their team namespaces.
        replicas = [
            o for o in rendered if o["kind"] == "ModelReplica" and o["spec"]["clusterName"] == name
        ]
        first = stubs.v1.RunFunction(request(cluster))
        got = desired(stubs.v1.RunFunction(request(cluster, required=satisfy(first, replicas))))
        printed = [o for o in shared if o["metadata"]["name"].startswith(f"{name}-")]
        keys = [o["metadata"]["annotations"][RESOURCE_KEY] for o in printed]
        assert sorted(keys) == sorted(k for k in got if k.startswith(("epp-", "team-namespace-")))
        teams += sum(k.startswith("team-namespace-") for k in keys)
        for o in printed:
            # render sends them through the provider config the cluster's replicas use (the
            # example's published one); live, the cluster publishes its own.
            expected = copy.deepcopy(got[o["metadata"]["annotations"][RESOURCE_KEY]])
            expected["spec"]["providerConfigRef"] = o["spec"]["providerConfigRef"]
            assert expected == o, o["metadata"]["name"]
    assert teams == 2  # ml-team on the two clusters its uncached replicas are placed on


def _cache_sections(rendered: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[Any]]]:
    """Each rendered ModelCache with the Usages and Objects printed right after it."""
    sections: list[tuple[dict[str, Any], list[Any]]] = []
    for obj in rendered:
        if obj["kind"] in AFTER_CACHES:
            break  # The endpoints' backends and the services follow the caches
        if obj["kind"] == "ModelCache":
            sections.append((obj, []))
        elif sections and obj["kind"] in ("Usage", "Object"):
            sections[-1][1].append(obj)
        elif sections:
            raise AssertionError(f"{obj['kind']} printed after the caches")
    return sections


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="examples/ not present")
def test_cache_function_matches_render(stubs: Stubs) -> None:
    """The llama-405b cache: same Objects and status over gRPC as in ``render``."""
    docs = _documents()
    rendered = _render([EXAMPLES])
    classes = {
        d["metadata"]["name"]: InferenceClass.model_validate(d)
        for d in docs
        if d["kind"] == "InferenceClass"
    }
    # The control-plane Secret the example's authSecret names (render assumes it exists).
    token = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "hf-token", "namespace": "ml-team"},
        "data": {"HF_TOKEN": "aGZfZXhhbXBsZQ=="},
    }
    world = [_published(d, classes) for d in docs if d["kind"] == "InferenceCluster"]
    world.append(token)
    sections = _cache_sections(rendered)
    assert sections, "the examples stage no cache"
    for expected_cache, expected_objects in sections:
        [xr] = [
            d
            for d in docs
            if d["kind"] == "ModelCache"
            and d["metadata"]["name"] == expected_cache["metadata"]["name"]
        ]
        first = stubs.v1.RunFunction(request(xr))
        rsp = stubs.v1.RunFunction(request(xr, required=satisfy(first, world)))
        got = desired(rsp)
        assert got == {
            (
                cache_usage_key(o["metadata"]["labels"][CLUSTER_LABEL])
                if o["kind"] == "Usage"
                else o["metadata"]["annotations"][RESOURCE_KEY]
            ): o
            for o in expected_objects
        }
        status = dict(composite_status(rsp))
        status["conditions"] = [
            dict(zip(("type", "status", "reason", "message"), c, strict=True))
            for c in conditions(rsp)
        ]
        assert status == expected_cache["status"]
        # The token's value reaches no composed object: only a reference names its Secret.
        assert "aGZfZXhhbXBsZQ==" not in json.dumps(got)


def _converged(obj: dict[str, Any]) -> dict[str, Any]:
    """A composed resource as observed once its provider made it Ready (an Object: found)."""
    out = copy.deepcopy(obj)
    out["status"] = {
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "Available"},
            {"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
        ]
    }
    if obj["kind"] == "Object":
        out["status"]["atProvider"] = {"manifest": obj["spec"]["forProvider"]["manifest"]}
    return out


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="examples/ not present")
def test_an_existing_clusters_stack_is_what_the_cluster_function_converges_to(
    stubs: Stubs,
) -> None:
    """eu-west-1: render prints the provider configs, stack and Usages the function composes
    once every object it composed is observed Ready, round after round."""
    docs = _documents()
    [cluster] = [
        d for d in docs if d["kind"] == "InferenceCluster" and d["metadata"]["name"] == "eu-west-1"
    ]
    classes = [d for d in docs if d["kind"] == "InferenceClass"]
    observed: dict[str, dict[str, Any]] = {}
    for _ in range(12):
        first = stubs.v1.RunFunction(request(cluster, observed=observed))
        rsp = stubs.v1.RunFunction(
            request(cluster, observed=observed, required=satisfy(first, classes))
        )
        got = desired(rsp)
        if got.keys() <= observed.keys():
            break
        observed = {k: _converged(v) for k, v in got.items()}
    else:
        raise AssertionError("the cluster function never converged")
    live = sorted(
        json.dumps(v, sort_keys=True)
        for k, v in got.items()
        if not k.startswith(("epp-", "team-namespace-"))
    )
    printed = sorted(
        json.dumps(o, sort_keys=True)
        for o in _render([EXAMPLES])
        if o["kind"] in ("ClusterProviderConfig", "Release", "Usage", "Object")
        and o["metadata"]["name"].startswith("eu-west-1-")
        and o["metadata"].get("namespace") in (None, "modelplane-system")
        and not _is_shared(o)
    )
    assert printed == live
