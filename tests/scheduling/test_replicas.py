"""replica_object (docs/composition.md, "The ModelReplica of a placement") and schedule_all
(docs/scheduling.md, "Inputs, identity and result").
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from modelplane.api import ModelDeployment
from modelplane.naming import replica_name
from modelplane.scheduling import CACHE_NONE, UNRESOLVED, replica_object, schedule, schedule_all

from .builders import (
    cluster,
    deployment,
    engine,
    gpu,
    host,
    member,
    model_cache,
    pool,
    replica,
    request,
)


def seeded() -> ModelDeployment:
    return deployment(
        "coder",
        1,
        engine(
            "coder",
            member("Leader", request("host", 1, 'device.driver == "cpu.example.com"')),
            member("Worker", request("gpu", 8), worker_nodes=2),
            copies=2,
        ),
        labels={"team": "ml", "modelplane.ai/cluster": "spoofed"},
        cache="qwen",
    )


def revision_of(d: ModelDeployment) -> str:
    """The template hash as docs/reconcile.md defines it, computed independently:
    SHA-256 of the canonical JSON of the template's labels, engines, modelCacheRef and serving.
    """
    template: dict[str, Any] = d.spec.template.to_wire()
    spec = template["spec"]
    content = {
        "labels": (template.get("metadata") or {}).get("labels") or {},
        **{k: spec[k] for k in ("engines", "modelCacheRef", "serving") if k in spec},
    }
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def test_replica_object_for_a_new_placement() -> None:
    d = seeded()
    c1 = cluster("c1", pool("cpu", 1, host()), pool("h100", 4, gpu()))
    s = schedule(d, [c1], [], CACHE_NONE, [])
    obj = replica_object(d, s.replicas[0]).to_wire()
    assert obj["apiVersion"] == "modelplane.ai/v1alpha1" and obj["kind"] == "ModelReplica"
    assert obj["metadata"] == {
        "name": "coder-8ee2b",
        "namespace": "ml-team",
        "labels": {
            "team": "ml",
            "modelplane.ai/cluster": "c1",  # managed labels win a clash
            "modelplane.ai/deployment": "coder",
            "modelplane.ai/deployment-namespace": "ml-team",
            "modelplane.ai/replica-index": "0",
            "modelplane.ai/template-hash": revision_of(d),
            # It names a ModelCache, whose PVC is in the shared namespace.
            "modelplane.ai/remote-namespace": "default",
        },
    }
    assert list(obj["metadata"]["labels"]) == [
        "team",
        "modelplane.ai/cluster",
        "modelplane.ai/deployment",
        "modelplane.ai/deployment-namespace",
        "modelplane.ai/replica-index",
        "modelplane.ai/template-hash",
        "modelplane.ai/remote-namespace",
    ]
    spec = obj["spec"]
    assert spec["clusterName"] == "c1"
    assert spec["modelCacheRef"] == {"name": "qwen"}
    assert "serving" not in spec and "tolerations" not in spec
    (eng,) = spec["engines"]
    assert (eng["name"], eng["copies"]) == ("coder", 2) and "phase" not in eng
    leader, worker = eng["members"]
    assert leader["role"] == "Leader" and leader["nodePoolName"] == "cpu"
    assert "deviceRequests" not in leader and "worker" not in leader
    assert worker["nodePoolName"] == "h100" and worker["worker"] == {"nodes": 2}
    assert worker["deviceRequests"] == [
        {
            "name": "gpu",
            "deviceClassName": "gpu.nvidia.com",
            "count": 8,
            "selectors": [
                {"cel": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0'}
            ],
        }
    ]
    assert worker["template"] == d.spec.template.spec.engines[0].members[1].template.to_wire()
    assert "nodeSelector" not in worker


def test_serving_is_copied_verbatim() -> None:
    d = deployment("chat")
    raw = d.to_wire()
    raw["spec"]["template"]["spec"]["serving"] = {"mode": "Unified"}
    d = ModelDeployment.model_validate(raw)
    s = schedule(d, [cluster("c1", pool("h100", 1, gpu()))], [], CACHE_NONE, [])
    assert replica_object(d, s.replicas[0]).to_wire()["spec"]["serving"] == {"mode": "Unified"}


def test_held_replica_is_re_emitted_as_observed() -> None:
    written = replica("chat", "a", 2, name="old-name", gpus=3)
    labels = {**(written.metadata.labels or {}), "extra": "kept", "modelplane.ai/cluster": "x"}
    observed = written.model_copy(
        update={"metadata": written.metadata.model_copy(update={"labels": labels})}
    )
    d = deployment("chat", 1)
    s = schedule(d, UNRESOLVED, [], CACHE_NONE, [observed])
    obj = replica_object(d, s.replicas[0]).to_wire()
    assert obj["metadata"]["name"] == replica_name("chat", "a", 2)
    assert obj["metadata"]["labels"]["extra"] == "kept"
    assert obj["metadata"]["labels"]["modelplane.ai/cluster"] == "a"
    assert obj["metadata"]["labels"]["modelplane.ai/replica-index"] == "2"
    assert obj["spec"] == observed.spec.to_wire()


def test_schedule_all_later_deployments_see_earlier_placements() -> None:
    c1 = cluster("c1", pool("h100", 1, gpu()))
    big = deployment("b-big", 1, engine("b-big", member("Standalone", request("gpu", 6))))
    small = deployment("a-small", 3)  # scheduled first: (ml-team, a-small) < (ml-team, b-big)
    results = schedule_all([big, small], [c1], [], [], [])
    assert [r.deployment.metadata.name for r in results] == ["a-small", "b-big"]
    assert results[0].schedule.total == 3
    assert results[1].schedule.total == 0  # 5 GPUs left, needs 6
    assert [r.metadata.name for r in results[0].replicas] == [
        p.name for p in results[0].schedule.replicas
    ]


def test_schedule_all_replaces_an_earlier_deployments_observed_replicas() -> None:
    c1 = cluster("c1", pool("h100", 1, gpu()))
    # a-old holds 8 GPUs as observed but is parked now: its devices are free for b-new.
    observed = [replica("a-old", "c1", 0, gpus=8)]
    results = schedule_all([deployment("b-new", 1), deployment("a-old", 0)], [c1], [], [], observed)
    assert results[0].schedule.total == 0 and results[1].schedule.total == 1


def test_schedule_all_resolves_caches_locally() -> None:
    c1 = cluster("c1", pool("h100", 1, gpu()))
    results = schedule_all(
        [deployment("x", 1, cache="qwen"), deployment("y", 1, cache="other")],
        [c1],
        [],
        [model_cache("qwen")],
        [],
    )
    assert [r.schedule.total for r in results] == [1, 0]
    assert results[1].schedule.explain[0].reason == "CacheUnavailable"
