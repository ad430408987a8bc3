"""Decision 5: every field of a member template and of serving.endpointPicker reaches the pods.

The distinctive templates below set every field the API models define (checked against the
models, so a field added to the API without composition support fails here), and every
value they set must appear in the composed pods of every workload kind.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Union

import pytest
from pydantic import BaseModel

from modelplane.api.modeldeployment import ReplicaEndpointPicker
from modelplane.api.pod import ReplicaPodTemplate
from modelplane.composition import compose_replica

from .builders import cluster, gpu_request, manifests, pod_templates, replica, user_picker

ENV = [
    {"name": "PLAIN", "value": "v-plain-7"},
    {
        "name": "FROM_CM",
        "valueFrom": {"configMapKeyRef": {"name": "cm-7", "key": "k-7", "optional": True}},
    },
    {
        "name": "FROM_FIELD",
        "valueFrom": {"fieldRef": {"fieldPath": "status.podIP", "apiVersion": "v1"}},
    },
    {
        "name": "FROM_SECRET",
        "valueFrom": {"secretKeyRef": {"name": "sec-7", "key": "sk-7", "optional": False}},
    },
]
RESOURCES = {"requests": {"cpu": "1500m", "memory": 1234}, "limits": {"memory": "77Gi"}}


def distinctive_template(role: str) -> dict[str, Any]:
    """A member template that sets every field of the curated PodTemplate."""
    sidecar_probes = [
        {
            "grpc": {"port": 7001, "service": "svc-7"},
            "failureThreshold": 7,
            "periodSeconds": 17,
            "successThreshold": 1,
            "timeoutSeconds": 27,
            "initialDelaySeconds": 37,
        },
        {"httpGet": {"path": "/ready-7", "port": "side-http"}},
        {"tcpSocket": {"port": 7003}},
    ]
    sidecars = [
        {
            "name": f"side-{i}",
            "image": f"example.com/side-{i}:7",
            "command": [f"/bin/side-{i}"],
            "args": [f"--side={i}"],
            "env": ENV,
            "ports": [{"name": "side-http", "containerPort": 7100 + i}],
            "readinessProbe": probe,
            "resources": RESOURCES,
        }
        for i, probe in enumerate(sidecar_probes)
    ]
    engine = {
        "name": "engine",
        "image": f"example.com/engine-{role}:7",
        "command": ["python", "-m", "engine"],
        "args": ["--model=/weights-7", "--flag-7"],
        "env": ENV,
        "ports": [
            {"name": "metrics", "containerPort": 7777},
            {"name": "http", "containerPort": 7000},
        ],
        "resources": RESOURCES,
    }
    return {
        "metadata": {
            "labels": {"team-7": "ml-7", "app.kubernetes.io/name": "x7"},
            "annotations": {"example.com/note-7": "a long annotation value 7"},
        },
        "spec": {"containers": [engine, *sidecars], "imagePullSecrets": [{"name": "pull-7"}]},
    }


def distinctive_picker() -> dict[str, Any]:
    """An endpoint picker that sets every field of serving.endpointPicker."""
    picker = user_picker(
        config={"apiVersion": "x/v1", "kind": "Cfg7", "nested": {"list": [1, "two", None, True]}},
        command=["/picker-7"],
        env=ENV,
        resources=RESOURCES,
    )
    picker["template"]["spec"]["imagePullSecrets"] = [{"name": "picker-pull-7"}]
    return picker


def _unwrap(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [t for a in typing.get_args(annotation) for t in _unwrap(a)]
    return [annotation]


def model_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every leaf field path a model defines (lists as ``[]``; maps and scalars are leaves)."""
    paths: set[str] = set()
    for name, field in model.model_fields.items():
        path = f"{prefix}{field.alias or name}"
        for t in _unwrap(field.annotation):
            if typing.get_origin(t) is list:
                (item,) = typing.get_args(t)
                for inner in _unwrap(item):
                    if isinstance(inner, type) and issubclass(inner, BaseModel):
                        paths |= model_paths(inner, f"{path}[].")
                    else:
                        paths.add(path)
            elif isinstance(t, type) and issubclass(t, BaseModel):
                paths |= model_paths(t, f"{path}.")
            elif t is not type(None):
                paths.add(path)
    return paths


def set_paths(value: BaseModel, prefix: str = "") -> set[str]:
    """Every leaf field path set in a model instance."""
    paths: set[str] = set()
    for name, field in type(value).model_fields.items():
        attr = getattr(value, name)
        if attr is None:
            continue
        path = f"{prefix}{field.alias or name}"
        items = attr if isinstance(attr, list) else [attr]
        suffix = "[]." if isinstance(attr, list) else "."
        for item in items:
            if isinstance(item, BaseModel):
                paths |= set_paths(item, f"{path}{suffix}")
            else:
                paths.add(path)
    return paths


def contains(composed: Any, user: Any) -> bool:
    """``user`` appears in ``composed``: dict keys recursively, lists as a contiguous run."""
    if isinstance(user, dict):
        return isinstance(composed, dict) and all(
            k in composed and contains(composed[k], v) for k, v in user.items()
        )
    if isinstance(user, list):
        if not isinstance(composed, list):
            return False
        n = len(user)
        return any(
            all(contains(c, u) for c, u in zip(composed[i : i + n], user, strict=True))
            for i in range(len(composed) - n + 1)
        )
    return bool(composed == user)


def test_the_distinctive_member_template_sets_every_field() -> None:
    template = ReplicaPodTemplate.model_validate(distinctive_template("leader"))
    assert set_paths(template) == model_paths(ReplicaPodTemplate)


def test_the_distinctive_picker_sets_every_field() -> None:
    picker = ReplicaEndpointPicker.model_validate(distinctive_picker())
    assert set_paths(picker) == model_paths(ReplicaEndpointPicker)


def _gang(leader: dict[str, Any], worker: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "big",
        "members": [
            {
                "role": "Leader",
                "nodePoolName": "a",
                "deviceRequests": [gpu_request()],
                "template": leader,
            },
            {
                "role": "Worker",
                "nodePoolName": "b",
                "deviceRequests": [gpu_request()],
                "worker": {"nodes": 2},
                "template": worker,
            },
        ],
    }


CASES = {
    "deployment": (
        "Standard",
        [
            {
                "name": "solo",
                "members": [
                    {
                        "role": "Standalone",
                        "nodePoolName": "a",
                        "deviceRequests": [gpu_request()],
                        "template": distinctive_template("standalone"),
                    }
                ],
            }
        ],
    ),
    "leaderworkerset": (
        "Standard",
        [_gang(distinctive_template("leader"), distinctive_template("worker"))],
    ),
    "podcliqueset": (
        "Dynamo",
        [_gang(distinctive_template("leader"), distinctive_template("worker"))],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_member_template_value_reaches_the_pods(case: str) -> None:
    stack, engines = CASES[case]
    rep = replica(engines, modelCacheRef={"name": "c7"})
    objs = manifests(compose_replica(rep, cluster(stack)))
    workload = objs[f"model-serving-{engines[0]['name']}"]
    members = engines[0]["members"]
    pods = pod_templates(workload)
    assert len(pods) == len(members)
    for member, pod in zip(members, pods, strict=True):
        template = member["template"]
        assert contains(pod["metadata"]["labels"], template["metadata"]["labels"])
        assert pod["metadata"]["annotations"] == template["metadata"]["annotations"]
        assert pod["spec"]["imagePullSecrets"] == template["spec"]["imagePullSecrets"]
        composed = {c["name"]: c for c in pod["spec"]["containers"]}
        assert list(composed) == [c["name"] for c in template["spec"]["containers"]]
        for container in template["spec"]["containers"]:
            assert contains(composed[container["name"]], container), (
                case,
                member["role"],
                container["name"],
            )


def test_every_picker_value_reaches_the_picker_pod() -> None:
    picker = distinctive_picker()
    rep = replica(serving={"mode": "Unified", "router": "EndpointPicker", "endpointPicker": picker})
    objs = manifests(compose_replica(rep, cluster()))
    pod = objs["epp"]["spec"]["template"]["spec"]
    user_spec = picker["template"]["spec"]
    assert pod["imagePullSecrets"] == user_spec["imagePullSecrets"]
    assert contains(pod["containers"][0], user_spec["containers"][0])
    assert json.loads(objs["epp-config"]["data"]["epp-config.yaml"]) == picker["config"]


@pytest.mark.parametrize("case", list(CASES))
def test_the_distinctive_pods_are_schema_valid(case: str) -> None:
    from .schemas import require_shared, validate_delivered

    require_shared()
    stack, engines = CASES[case]
    picker = distinctive_picker()
    rep = replica(
        engines,
        modelCacheRef={"name": "c7"},
        serving={"mode": "Unified", "router": "EndpointPicker", "endpointPicker": picker},
    )
    for composed in compose_replica(rep, cluster(stack)).objects:
        validate_delivered(composed.object)
