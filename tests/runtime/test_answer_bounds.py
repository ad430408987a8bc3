"""No answer can exceed what Crossplane receives: the largest allowed inputs, by byte size.

Crossplane v2.3.4 dials a function with ``grpc.NewClient`` and no call options
(``internal/xfn/function_runner.go``), so grpc-go's default client receive limit applies:
4 MiB (``defaultClientMaxReceiveMessageSize`` in grpc-go's ``dialoptions.go``). An answer over
it is refused whole and nothing of it is applied (docs/scale.md, "The largest answer").
"""

from __future__ import annotations

from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest

from modelplane.api.inferencecluster import MAX_CA_CERTIFICATE, MAX_OCCUPANCY_REPLICAS
from modelplane.api.modelcache import MAX_CACHE_CLUSTERS
from modelplane.api.modelendpoint import ModelEndpointSpec
from modelplane.api.modelservice import MAX_ENTRIES
from modelplane.api.validation import validate_document
from modelplane.composition.namespaces import MAX_TEAM_NAMESPACES
from modelplane.reconcile.cache import MAX_STAGING
from modelplane.reconcile.service import MAX_SERVING_GATEWAYS, MAX_TRUST_BUNDLES
from modelplane.runtime.crossplane.server import CROSSPLANE_RECEIVE_LIMIT, run_bytes
from tests.builders import front_door_cluster, inference_gateway

from .helpers import (
    deployment,
    direct,
    existing_cluster,
    inference_class,
    model_cache,
    observed_object,
    ready_cluster,
    replica,
    request,
    satisfy,
    to_dict,
)

RECEIVE_LIMIT = CROSSPLANE_RECEIVE_LIMIT
# The most replicas a ModelDeployment fans out to (its spec.replicas maximum).
MAX_REPLICAS = 100
# The longest name a cluster-scoped object may have.
LONGEST = 253
# The longest InferenceCluster name: IC-10 (the API server runs it, Crossplane >= 2.2 carries
# root rules into the CRD). A cache names each cluster four times per cluster it stages on
# (three Objects' keys and its Usage's), so the cache's bound is taken at this length.
CLUSTER_NAME_MAX = 63
# The longest model name a ModelEndpoint may expect (its spec.model maxLength).
MAX_MODEL_NAME = next(
    m.max_length
    for m in ModelEndpointSpec.model_fields["model"].metadata
    if hasattr(m, "max_length")
)


def _answer(xr: dict[str, Any], world: list[dict[str, Any]], **kw: Any) -> fnv1.RunFunctionResponse:
    """The answer to the call that has every requirement satisfied from ``world``."""
    first = direct(request(xr, **kw))
    data = run_bytes(request(xr, required=satisfy(first, world), **kw).SerializeToString())
    answer = fnv1.RunFunctionResponse.FromString(data)
    assert not [r.message for r in answer.results if r.severity == fnv1.SEVERITY_FATAL]
    return answer


def _size(answer: fnv1.RunFunctionResponse) -> int:
    return len(answer.SerializeToString())


def _long(prefix: str, length: int = LONGEST) -> str:
    return prefix.ljust(length, "x")


def _cache_cluster(index: int) -> dict[str, Any]:
    name = _long(f"c{index:05d}-", CLUSTER_NAME_MAX)
    out = ready_cluster(name)
    existing = out["spec"]["cluster"]["existing"]
    existing["secretRef"]["name"] = f"kubeconfig-{index}"
    existing["cache"] = {"storageClassName": _long("storage-")}
    return out


def _observed(answer: fnv1.RunFunctionResponse) -> dict[str, dict[str, Any]]:
    """Every composed Object observed applied, its remote object with a UID (and every
    Usage observed)."""
    observed = {}
    for key, composed in answer.desired.resources.items():
        obj = observed_object(to_dict(composed.resource), ready=True)
        if "atProvider" in obj["status"]:
            obj["status"]["atProvider"]["manifest"]["metadata"]["uid"] = "0" * 36
        observed[key] = obj
    return observed


def test_an_inference_cluster_name_is_at_most_63_characters() -> None:
    # The bound the cache's answer is taken at: a longer name never reaches the function.
    too_long = ready_cluster(_long("c", CLUSTER_NAME_MAX + 1))
    assert [p.path for p in validate_document(too_long).problems] == ["metadata.name"]
    assert validate_document(ready_cluster(_long("c", CLUSTER_NAME_MAX))).problems == []


def test_a_cache_at_its_largest_footprint_answers_under_the_limit() -> None:
    # More matching clusters than the status lists, the longest names and source, every
    # staging cluster observed started so that its Job is composed too.
    world = [_cache_cluster(i) for i in range(MAX_CACHE_CLUSTERS + 100)]
    xr = model_cache(_long("q", 63))
    xr["spec"]["huggingFace"].update(
        {
            "repo": _long("org/", 256),
            "revision": _long("v", 256),
            "authSecret": {"name": _long("token-"), "key": _long("k")},
        }
    )
    fresh = _answer(xr, world)
    answer = _answer(xr, world, observed=_observed(fresh))
    jobs = [k for k in answer.desired.resources if k.startswith("cache-download-")]
    assert len(jobs) == MAX_STAGING
    assert max(_size(fresh), _size(answer)) < RECEIVE_LIMIT


def test_a_deployment_at_its_most_replicas_answers_under_the_limit() -> None:
    world = [ready_cluster(_long(f"c{i:04d}-", 63)) for i in range(1000)]
    answer = _answer(deployment(replicas=MAX_REPLICAS), [*world, inference_class()])
    assert len(answer.desired.resources) >= MAX_REPLICAS
    assert _size(answer) < RECEIVE_LIMIT


def test_a_cluster_with_the_most_listed_replicas_answers_under_the_limit() -> None:
    cluster = existing_cluster(pools=[("h100", "h100-8x", 100)])
    name = cluster["metadata"]["name"]
    pinned = [
        replica(name=_long(f"r{i:05d}-"), namespace=_long(f"n{i:05d}-", 63), cluster=name)
        for i in range(MAX_OCCUPANCY_REPLICAS)
    ]
    answer = _answer(cluster, [inference_class(), *pinned])
    # Each replica in a namespace of its own: only MAX_TEAM_NAMESPACES of them get their
    # Namespace and shared picker objects (all 8,192 would answer 48 MB).
    namespaces = [k for k in answer.desired.resources if k.startswith("team-namespace-")]
    assert len(namespaces) == MAX_TEAM_NAMESPACES
    assert _size(answer) < RECEIVE_LIMIT


def _tls_host(k: int) -> str:
    """The longest hostname of TLS cluster ``k`` (253 characters)."""
    return f"{_long(f't{k}-', 63)}.{'h' * 63}.{'o' * 63}.{'s' * 61}"


def _largest_ca(k: int) -> str:
    """A CA bundle of the most characters IC-16 and the schema allow, distinct per ``k``."""
    line = f"{k:04d}".ljust(76, "A")
    count = (MAX_CA_CERTIFICATE - 60) // 77
    pem = f"-----BEGIN CERTIFICATE-----\n{(line + chr(10)) * count}-----END CERTIFICATE-----\n"
    assert len(pem) <= MAX_CA_CERTIFICATE
    return pem


def _tls_cluster(k: int) -> dict[str, Any]:
    """An inference cluster serving HTTPS, trusting the largest CA bundle of its own."""
    cluster = ready_cluster(_long(f"tls-{k}-", CLUSTER_NAME_MAX))
    cluster["spec"]["gateway"] = {
        "implementation": "EnvoyGateway",
        "tls": {
            "hostname": _tls_host(k),
            "certificateRef": {"name": "gateway-tls"},
            "caCertificate": _largest_ca(k),
        },
    }
    return cluster


def _endpoint(entry: int, index: int, tls: int | None = None) -> dict[str, Any]:
    """An endpoint of a hosted origin, or (``tls``) of a replica on that TLS cluster."""
    name = _long(f"e{entry:02d}-{index:03d}-")
    labels = {"modelplane.ai/deployment": _long(f"d{entry:02d}-", 63)}
    origin = f"https://{_long(f'e{entry}-{index}-', 63)}.{'h' * 63}.{'o' * 63}"
    if tls is not None:
        labels["modelplane.ai/cluster"] = _tls_cluster(tls)["metadata"]["name"]
        origin = f"https://{_tls_host(tls)}"
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": "ml-team", "labels": labels},
        "spec": {
            "origin": origin,
            # The longest model name: every backendRef of the route carries it.
            "model": _long(f"m{entry:02d}-{index:03d}-", MAX_MODEL_NAME),
        },
        "status": {"routing": {"backendName": _long(f"b{entry:02d}-{index:03d}-", 63)}},
    }


FRONT_DOORS = MAX_SERVING_GATEWAYS


@pytest.mark.parametrize("tls", [False, True], ids=["hosted", "tls-clusters"])
def test_a_service_with_the_most_entries_answers_under_the_limit(tls: bool) -> None:
    # Every entry selects a deployment of the most replicas, each its own endpoint.
    entries = [
        {"selector": {"matchLabels": {"modelplane.ai/deployment": _long(f"d{j:02d}-", 63)}},
         "weight": 1}
        for j in range(MAX_ENTRIES)
    ]  # fmt: skip
    xr = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelService",
        "metadata": {"name": _long("s", 63), "namespace": "ml-team", "uid": "u1"},
        "spec": {"endpoints": entries},
    }
    # The route and its backends go to every serving gateway's cluster: the most a service is
    # routed on (reconcile/service.py MAX_SERVING_GATEWAYS).
    fronts = [f"front-door-{n}" for n in range(FRONT_DOORS)]
    gateways = [inference_gateway(n, n, address="198.51.100.20") for n in fronts]
    clusters = [front_door_cluster(n) for n in fronts]
    # With tls: every replica on an HTTPS cluster of its own CA bundle, the largest, so each
    # gateway gets as many CA ConfigMaps as a route trusts (reconcile/service.py
    # MAX_TRUST_BUNDLES), one more cluster's endpoints left out.
    kinds = MAX_TRUST_BUNDLES + 1
    endpoints = [
        _endpoint(j, i, i % kinds if tls else None)
        for j in range(MAX_ENTRIES)
        for i in range(MAX_REPLICAS)
    ]
    if tls:
        clusters += [_tls_cluster(k) for k in range(kinds)]
    answer = _answer(xr, [*gateways, *clusters, *endpoints])
    assert answer.desired.resources
    config_maps = [r for r in answer.desired.resources if "-ca-" in r]
    assert len(config_maps) == (MAX_TRUST_BUNDLES * FRONT_DOORS if tls else 0)
    assert _size(answer) < RECEIVE_LIMIT


def test_an_answer_over_the_limit_is_fatal_and_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Whatever the input, an answer Crossplane could not receive is never sent: the call
    # answers Fatal with the size (shown on the composite), and composes nothing, so
    # Crossplane applies and deletes nothing.
    xr, world = replica(), [ready_cluster("us-east-1")]
    small = _answer(xr, world)
    limit = _size(small) - 1
    monkeypatch.setattr("modelplane.runtime.crossplane.server.CROSSPLANE_RECEIVE_LIMIT", limit)
    first = direct(request(xr))
    data = run_bytes(request(xr, required=satisfy(first, world)).SerializeToString())
    answer = fnv1.RunFunctionResponse.FromString(data)
    (result,) = answer.results
    assert result.severity == fnv1.SEVERITY_FATAL
    assert f"over the {limit} bytes Crossplane receives from a function" in result.message
    assert not answer.desired.resources
    assert _size(answer) <= limit
