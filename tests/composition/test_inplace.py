"""What a composed object's cluster refuses to change in place (composition.inplace).

Per kind and field, each row with the released upstream rule it follows. The second half
composes real replicas and asks what an edit of the replica would be refused.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from modelplane.composition.inplace import Refusal, refusals, refused_fields, replacement_reasons
from tests.builders import memory_selector
from tests.composition.builders import gang_engine, gpu_request, replica, standalone_engine

Json = dict[str, Any]


def rct(count: int = 1, cel: str = "true", labels: dict[str, str] | None = None) -> Json:
    meta: Json = {"name": "t", "namespace": "default"}
    if labels:
        meta["labels"] = labels
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}
    request["exactly"]["selectors"] = [{"cel": {"expression": cel}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": meta,
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def test_a_claim_template_refuses_any_spec_change() -> None:
    """kubernetes ``pkg/apis/resource/validation/validation.go``
    ``ValidateResourceClaimTemplateUpdate``: ``ValidateImmutableField(template.Spec,
    oldTemplate.Spec, field.NewPath("spec"))``; object metadata stays mutable."""
    assert refused_fields(rct(1), rct(2)) == ["spec"]  # a GPU count
    assert refused_fields(rct(cel="a"), rct(cel="b")) == ["spec"]  # a device selector
    assert refused_fields(rct(), rct(labels={"team": "ml"})) == []
    assert refused_fields(rct(), rct()) == []


def workload(replicas: int = 1, image: str = "v1", selector: str = "w") -> Json:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "w"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": selector}},
            "template": {"spec": {"containers": [{"name": "engine", "image": image}]}},
        },
    }


def test_a_deployment_takes_its_pod_template_but_not_its_selector() -> None:
    """kubernetes ``pkg/registry/apps/deployment/strategy.go``
    ``deploymentStrategy.ValidateUpdate``: apps/v1 refuses a changed ``spec.selector``
    (``ValidateImmutableField``); the pod template and replica count roll in place."""
    assert refused_fields(workload(image="v1"), workload(image="v2")) == []
    assert refused_fields(workload(replicas=1), workload(replicas=3)) == []
    assert refused_fields(workload(selector="a"), workload(selector="b")) == ["spec.selector"]


def lws(size: int = 2, sub_group: int | None = None, image: str = "v1") -> Json:
    template: Json = {
        "size": size,
        "leaderTemplate": {"spec": {"containers": [{"image": image}]}},
        "workerTemplate": {"spec": {"containers": [{"image": image}]}},
    }
    if sub_group is not None:
        template["subGroupPolicy"] = {"subGroupSize": sub_group}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "l"},
        "spec": {"replicas": 1, "leaderWorkerTemplate": template},
    }


@pytest.mark.parametrize(
    ("old", "new", "refused"),
    [
        (lws(size=2), lws(size=3), []),
        (lws(image="v1"), lws(image="v2"), []),
        (
            lws(sub_group=2),
            lws(sub_group=4),
            ["spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize"],
        ),
        (lws(), lws(sub_group=2), ["spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize"]),
        (lws(sub_group=2), lws(), ["spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize"]),
    ],
)
def test_a_leader_worker_set_refuses_only_its_sub_group_size(
    old: Json, new: Json, refused: list[str]
) -> None:
    """kubernetes-sigs/lws v0.10.0 ``pkg/webhooks/leaderworkerset_webhook.go``
    ``ValidateUpdate``: subGroupSize is immutable, cannot be enabled after creation nor
    removed; size, replicas and both templates change in place."""
    assert refused_fields(old, new) == refused


def clique(name: str, count: int, **spec: Any) -> Json:
    body: Json = {
        "roleName": name,
        "replicas": count,
        "minAvailable": count,
        "podSpec": {"schedulerName": "kai-scheduler", "containers": [{"image": "v1"}]},
    }
    for key, value in spec.items():
        if key == "schedulerName":
            body["podSpec"]["schedulerName"] = value
        elif key == "image":
            body["podSpec"]["containers"] = [{"image": value}]
        else:
            body[key] = value
    return {"name": name, "spec": body}


def pcs(cliques: list[Json] | None = None, copies: int = 1, **template: Any) -> Json:
    cliques = cliques if cliques is not None else [clique("leader", 1), clique("worker", 1)]
    names = [c["name"] for c in cliques]
    group = {"name": "gang", "cliqueNames": names, "replicas": copies, "minAvailable": copies}
    body: Json = {
        "cliqueStartupType": "CliqueStartupTypeExplicit",
        "cliques": cliques,
        "podCliqueScalingGroups": [group],
        **template,
    }
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "p"},
        "spec": {"replicas": 1, "template": body},
    }


def _with_worker(**spec: Any) -> Json:
    return pcs([clique("leader", 1), clique("worker", 1, **spec)])


W = "spec.template.cliques[worker].spec."
G = "spec.template.podCliqueScalingGroups"


@pytest.mark.parametrize(
    ("new", "refused"),
    [
        (_with_worker(image="v2"), []),  # pod template contents
        (_with_worker(replicas=2), []),  # clique replicas
        (pcs(copies=1, terminationDelay="1h"), []),
        (_with_worker(minAvailable=2), [W + "minAvailable"]),
        (_with_worker(roleName="w"), [W + "roleName"]),
        (_with_worker(startsAfter=["leader"]), [W + "startsAfter"]),
        (_with_worker(schedulerName="default-scheduler"), [W + "podSpec.schedulerName"]),
        (pcs([clique("leader", 1)]), ["spec.template.cliques", G + "[gang].cliqueNames"]),
        (
            pcs([clique("leader", 1), clique("extra", 1)]),
            ["spec.template.cliques", G + "[gang].cliqueNames"],
        ),
        (
            pcs([clique("worker", 1), clique("leader", 1)]),
            ["spec.template.cliques", G + "[gang].cliqueNames"],
        ),
        (pcs(copies=2), [G + "[gang].minAvailable"]),
        (pcs(podCliqueScalingGroups=[]), [G]),
        (pcs(cliqueStartupType="CliqueStartupTypeAnyOrder"), ["spec.template.cliqueStartupType"]),
        (pcs(resourceClaimTemplates=[{"name": "x"}]), ["spec.template.resourceClaimTemplates"]),
    ],
)
def test_a_pod_clique_set_refuses_the_webhook_list(new: Json, refused: list[str]) -> None:
    """ai-dynamo/grove v0.1.0-alpha.12-rc1 (same list in alpha.11)
    ``operator/internal/webhook/admission/pcs/validation/podcliqueset.go``
    ``validatePodCliqueSetTemplateSpecUpdate``: the clique set and order (Explicit startup),
    each clique's roleName, minAvailable, startsAfter and podSpec.schedulerName, the scaling
    groups' cliqueNames and minAvailable, cliqueStartupType and resourceClaimTemplates are
    immutable; replicas, pod template contents and terminationDelay change in place."""
    assert refused_fields(pcs(), new) == refused


def test_a_changed_kind_under_one_key_is_refused_and_new_or_gone_objects_are_not() -> None:
    """A different kind under the same resource key is another object, never an update."""
    old = {"workload": workload(), "claim": rct()}
    assert refusals(old, {"workload": lws()}) == (Refusal("workload", "Deployment", "kind"),)
    assert refusals(old, {"workload": workload(), "other": rct(2)}) == ()  # claim gone, other new
    assert str(Refusal("k", "PodCliqueSet", W + "minAvailable")) == (
        "PodCliqueSet spec.template.cliques[worker].spec.minAvailable"
    )


Edit = Callable[[Json], None]


def _gpus(engine: Json) -> None:
    engine["members"][0]["deviceRequests"] = [gpu_request(2)]


def _selector(engine: Json) -> None:
    engine["members"][0]["deviceRequests"][0]["selectors"] = [{"cel": memory_selector("40Gi")}]


def _image(engine: Json) -> None:
    for member in engine["members"]:
        member["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:v0.24.0"


def _nodes(engine: Json) -> None:
    engine["members"][1]["worker"] = {"nodes": 2}


def _copies(engine: Json) -> None:
    engine["copies"] = 2


CLAIM = "ResourceClaimTemplate spec"


@pytest.mark.parametrize(
    ("engine", "edit", "stack", "refused"),
    [
        (standalone_engine(), _gpus, "Standard", [CLAIM]),
        (standalone_engine(), _selector, "Standard", [CLAIM]),
        (standalone_engine(), _image, "Standard", []),
        (standalone_engine(), _copies, "Standard", []),
        (gang_engine(), _image, "Standard", []),
        (gang_engine(), _nodes, "Standard", []),
        (gang_engine(), _copies, "Standard", []),
        (gang_engine(), _image, "Dynamo", []),
        (gang_engine(), _nodes, "Dynamo", ["PodCliqueSet " + W + "minAvailable"]),
        (gang_engine(), _copies, "Dynamo", ["PodCliqueSet " + G + "[gang].minAvailable"]),
        (gang_engine(), _gpus, "Dynamo", [CLAIM]),
    ],
)
def test_what_a_replica_edit_would_be_refused(
    engine: Json, edit: Edit, stack: Any, refused: list[str]
) -> None:
    """The composed objects of a replica before and after one edit, on each stack."""
    edited = copy.deepcopy(engine)
    edit(edited)
    reasons = replacement_reasons(replica([engine]), replica([edited]), stack)
    assert [str(r) for r in reasons] == refused


def test_a_standalone_engine_turning_into_a_gang_changes_its_workload_kind() -> None:
    reasons = replacement_reasons(
        replica([standalone_engine("e")]), replica([gang_engine("e")]), "Standard"
    )
    assert [str(r) for r in reasons][0] == "Deployment kind"
