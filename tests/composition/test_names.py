"""Decision 6: every composed name is a DNS label within its budget, unique and deterministic."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.composition import compose_replica
from modelplane.naming import replica_name

from .builders import cluster, gang_engine, manifests, pod_templates, replica, standalone_engine

DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
MAX_BY_KIND = {"LeaderWorkerSet": 49, "PodCliqueSet": 24}

dns_label = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z", fullmatch=True)
long_label = st.builds(
    lambda head, fill: (head + fill * 63)[:62] + "x",
    st.from_regex(r"\A[a-z0-9][-a-z0-9]{0,20}\Z", fullmatch=True),
    st.sampled_from(["a", "9", "-", "z-"]),
)
names = st.one_of(long_label, dns_label)


def _compose(namespace: str, deployment: str, engines: list[str], stack: str) -> Any:
    rname = replica_name(deployment, "us-east-1", 0)
    built = [standalone_engine(engines[0])] + [gang_engine(e) for e in engines[1:]]
    rep = replica(
        built, name=rname, namespace=namespace, deployment=deployment, modelCacheRef={"name": "c"}
    )
    return compose_replica(rep, cluster(stack))


def _check(composition: Any) -> None:
    object_names = [o.object["metadata"]["name"] for o in composition.objects]
    assert len(set(object_names)) == len(object_names)
    remote: dict[tuple[str, str], int] = {}
    for composed in composition.objects:
        name = composed.object["metadata"]["name"]
        assert DNS_1035.match(name) and len(name) <= 63, name
        manifest = composed.object["spec"]["forProvider"]["manifest"]
        kind, rname = manifest["kind"], manifest["metadata"]["name"]
        assert DNS_1035.match(rname), rname
        assert len(rname) <= MAX_BY_KIND.get(kind, 63), (kind, rname)
        remote[(kind, rname)] = remote.get((kind, rname), 0) + 1
        if kind in ("Deployment", "LeaderWorkerSet", "PodCliqueSet") and composed.key.startswith(
            "model-serving"
        ):
            for pod in pod_templates(manifest):
                for value in pod["metadata"]["labels"].values():
                    assert len(value) <= 63 and LABEL_VALUE.match(value), value
                claims = pod["spec"].get("resourceClaims", [])
                for claim in claims:
                    assert len(claim["resourceClaimTemplateName"]) <= 63
    # Several objects share the picker name EPP, one per kind; no kind has two objects of a name.
    assert all(count == 1 for count in remote.values()), remote


@settings(max_examples=60, deadline=None)
@given(
    namespace=names,
    deployment=names,
    engines=st.lists(names, min_size=2, max_size=3, unique=True),
    stack=st.sampled_from(["Standard", "Dynamo"]),
)
def test_names_are_bounded_dns_labels_and_unique(
    namespace: str, deployment: str, engines: list[str], stack: str
) -> None:
    first = _compose(namespace, deployment, engines, stack)
    _check(first)
    again = _compose(namespace, deployment, engines, stack)
    assert [o.object for o in first.objects] == [o.object for o in again.objects]


def test_sixty_three_character_names() -> None:
    ns = "n" * 63
    dep = "d" * 63
    engines = ["e" * 63, "e" * 62 + "f", "e" * 62 + "g"]
    for stack in ("Standard", "Dynamo"):
        _check(_compose(ns, dep, engines, stack))


def test_engines_differing_only_after_the_cut_get_distinct_names() -> None:
    composition = _compose(
        "ml-team", "d" * 63, ["e" * 63, "e" * 62 + "f", "e" * 62 + "g"], "Dynamo"
    )
    workloads = [
        o.object["spec"]["forProvider"]["manifest"]["metadata"]["name"]
        for o in composition.objects
        if o.key.startswith("model-serving-")
    ]
    assert len(set(workloads)) == 3


def test_same_replica_name_in_two_namespaces_never_collides_remotely() -> None:
    a = manifests(compose_replica(replica(namespace="team-a"), cluster()))
    b = manifests(compose_replica(replica(namespace="team-b"), cluster()))
    for key in a:
        assert a[key]["metadata"]["name"] != b[key]["metadata"]["name"], key
    label = "modelplane.ai/serving"
    assert (
        a["inference-pool"]["spec"]["selector"]["matchLabels"][label]
        != b["inference-pool"]["spec"]["selector"]["matchLabels"][label]
    )


def test_a_namespace_starting_with_a_digit_still_gives_service_names() -> None:
    objs = manifests(compose_replica(replica(namespace="9lives"), cluster()))
    assert objs["epp-service"]["metadata"]["name"].startswith("mp-9lives-")
