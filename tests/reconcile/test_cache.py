"""ModelCache staging: objects per cluster, phases from observed objects, conditions."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from modelplane.api import InferenceCluster, ModelCache
from modelplane.composition.cache import (
    DOWNLOAD_IMAGE,
    DOWNLOAD_SCRIPT,
    JOB_MANAGEMENT_POLICIES,
    cache_names,
    owner_part,
    resource_key,
)
from modelplane.naming import dns_name
from modelplane.reconcile.cache import reconcile_cache
from modelplane.runtime.local.render import render, render_caches
from modelplane.runtime.wire import condition_wire, observed_objects
from tests.composition.schemas import require_shared, validate_delivered

from .fleet import cache, cluster, deployment, fleet

PVC = "modelcache-ml-team-qwen-17db2"  # the ModelCache PVC naming example
OBJECT_API = "kubernetes.m.crossplane.io/v1alpha1"


def _cluster(name: str, tier: str, storage_class: str | None = "rwx") -> dict[str, Any]:
    c = cluster(name, labels={"tier": tier})
    c["status"]["providerConfigRef"] = {"kind": "ClusterProviderConfig", "name": f"pc-{name}"}
    if storage_class is not None:
        c["spec"]["cluster"]["existing"]["cache"] = {"storageClassName": storage_class}
    return c


THREE = [_cluster("a", "gpu"), _cluster("b", "gpu"), _cluster("c", "cpu")]


def _typed(manifests: list[dict[str, Any]]) -> list[InferenceCluster]:
    return [InferenceCluster.model_validate(c) for c in manifests]


def _cache(auth: bool = False, status: dict[str, Any] | None = None, **kw: Any) -> ModelCache:
    raw = cache(match_labels={"tier": "gpu"}, **kw)
    if auth:
        raw["spec"]["huggingFace"]["authSecret"] = {"name": "hf-token"}
    if status is not None:
        raw["status"] = status
    return ModelCache.model_validate(raw)


def _manifests(result: Any, kind: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (o.cluster, o.object)
        for o in result.objects
        if o.object["spec"]["forProvider"]["manifest"]["kind"] == kind
    ]


JOB = cache_names(_cache()).job(_cache().spec.hugging_face)  # type: ignore[arg-type]


def _observed_object(
    name: str, manifest_status: dict[str, Any], uid: str | None = None
) -> dict[str, Any]:
    """An Object as provider-kubernetes reports it: the remote object under atProvider."""
    metadata = {"name": name} if uid is None else {"name": name, "uid": uid}
    return {
        "apiVersion": OBJECT_API,
        "kind": "Object",
        "metadata": {"name": "x", "namespace": "ml-team"},
        "status": {
            "atProvider": {"manifest": {"metadata": metadata, "status": manifest_status}},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _owned(*clusters: str) -> dict[str, Any]:
    """The Job's owner ConfigMap observed (with its UID) on each of ``clusters``."""
    hf = _cache().spec.hugging_face
    assert hf is not None
    return {
        resource_key(c, owner_part(hf)): _observed_object(JOB, {}, uid=f"uid-{c}") for c in clusters
    }


def test_three_clusters_two_matching_get_exactly_two_pvcs_and_two_jobs() -> None:
    result = reconcile_cache(_cache(), _typed(THREE), observed_objects(_owned("a", "b")))
    pvcs, jobs = _manifests(result, "PersistentVolumeClaim"), _manifests(result, "Job")
    owners = _manifests(result, "ConfigMap")
    assert [c for c, _ in pvcs] == ["a", "b"] and [c for c, _ in jobs] == ["a", "b"]
    assert [c for c, _ in owners] == ["a", "b"]
    assert _manifests(result, "Secret") == []  # no token is ever composed
    for cluster_name, obj in [*pvcs, *jobs, *owners]:
        assert obj["apiVersion"] == OBJECT_API and obj["kind"] == "Object"
        assert obj["metadata"]["namespace"] == "ml-team"
        assert obj["spec"]["providerConfigRef"] == {
            "kind": "ClusterProviderConfig",
            "name": f"pc-{cluster_name}",
        }
    pvc = pvcs[0][1]["spec"]["forProvider"]["manifest"]
    assert pvc["metadata"] == {
        "name": PVC,
        "namespace": "default",
        "labels": {"modelplane.ai/cache": "qwen", "modelplane.ai/cache-namespace": "ml-team"},
    }
    assert pvc["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "rwx",
        "resources": {"requests": {"storage": "16Gi"}},
    }
    job = jobs[0][1]["spec"]["forProvider"]["manifest"]
    assert job["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": JOB, "uid": "uid-a"}
    ]
    assert job["spec"]["backoffLimit"] == 4
    assert job["spec"]["ttlSecondsAfterFinished"] == 3600
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["volumes"] == [{"name": "model-cache", "persistentVolumeClaim": {"claimName": PVC}}]
    [container] = pod["containers"]
    assert container["image"] == DOWNLOAD_IMAGE
    # User text reaches the script only through the environment, never the shell source.
    assert container["command"] == ["/bin/sh", "-c", DOWNLOAD_SCRIPT]
    assert "Qwen" not in DOWNLOAD_SCRIPT
    assert {"name": "MODELPLANE_CACHE_SOURCE", "value": "Qwen/Qwen3-8B@main"} in container["env"]
    assert not any(e["name"] == "HF_TOKEN" for e in container["env"])
    # The hub cache layout: huggingface_hub writes under HF_HUB_CACHE, the mount, into
    # models--Qwen--Qwen3-8B/snapshots/<commit>/; never --local-dir (a flat directory).
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["HF_HUB_CACHE"] == "/mnt/models"
    assert env["MODELPLANE_CACHE_FOLDER"] == "models--Qwen--Qwen3-8B"
    assert env["MODELPLANE_CACHE_REF"] == "main"
    assert "HF_HUB_OFFLINE" not in env  # the Job is the one pod that asks the hub
    assert '"$cli" download "$MODELPLANE_CACHE_REPO" --revision "$MODELPLANE_CACHE_REVISION"\n' in (
        DOWNLOAD_SCRIPT
    )
    assert "--local-dir" not in DOWNLOAD_SCRIPT
    assert pod["containers"][0]["volumeMounts"] == [
        {"name": "model-cache", "mountPath": "/mnt/models"}
    ]
    # Distinct Object names per cluster, stable keys.
    names = [o.object["metadata"]["name"] for o in result.objects]
    assert len(set(names)) == len(names)
    owner = "cache-" + owner_part(_cache().spec.hugging_face)  # type: ignore[arg-type]
    assert [o.key for o in result.objects] == [
        "cache-pvc-a",
        f"{owner}-a",
        "cache-download-a",
        "cache-pvc-b",
        f"{owner}-b",
        "cache-download-b",
    ]


def test_the_hub_layouts_job_is_not_an_earlier_releases_job() -> None:
    # An earlier release named the Job (and keyed its owner) by sha256(source) alone; a
    # Job it left running with the flat script is not adopted: its owner is no longer
    # composed, so it goes, and the new Job stages the hub layout.
    hf = _cache().spec.hugging_face
    assert hf is not None
    flat_digest = hashlib.sha256(b"Qwen/Qwen3-8B@main").hexdigest()[:8]
    assert dns_name("ml-team/qwen", "download", flat_digest) != JOB
    assert owner_part(hf) != f"owner-{flat_digest}"


def test_pvc_name_is_the_claim_the_deployment_pods_mount_on_each_cluster() -> None:
    f = fleet(
        [deployment(2, modelCacheRef={"name": "qwen"})],
        THREE[:2],
        caches=[cache(match_labels={"tier": "gpu"})],
    )
    claims: dict[str, set[str]] = {}
    for rendered in render(f):
        for cluster_name, obj in rendered.remote:
            manifest = obj["spec"]["forProvider"]["manifest"]
            if manifest["kind"] != "Deployment":
                continue
            volumes = manifest["spec"]["template"]["spec"]["volumes"]
            claims.setdefault(cluster_name, set()).update(
                v["persistentVolumeClaim"]["claimName"]
                for v in volumes
                if "persistentVolumeClaim" in v
            )
    [staged] = render_caches(f)
    pvcs = {
        c: o["spec"]["forProvider"]["manifest"]["metadata"]["name"]
        for c, o in staged.remote
        if o["spec"]["forProvider"]["manifest"]["kind"] == "PersistentVolumeClaim"
    }
    assert claims and set(claims) == set(pvcs)
    for cluster_name, claim in claims.items():
        assert claim == {pvcs[cluster_name]} == {PVC}


def test_every_cache_object_is_schema_valid() -> None:
    require_shared()
    result = reconcile_cache(_cache(auth=True), _typed(THREE), observed_objects(_owned("a")))
    assert {o.object["spec"]["forProvider"]["manifest"]["kind"] for o in result.objects} == {
        "PersistentVolumeClaim",
        "ConfigMap",
        "Job",
    }
    for o in result.objects:
        validate_delivered(o.object)


def test_the_job_reads_the_token_from_the_clusters_own_secret() -> None:
    """No token Object: the Job names the platform's Secret on the cluster by secretKeyRef."""
    raw = cache(match_labels={"tier": "gpu"})
    raw["spec"]["huggingFace"]["authSecret"] = {"name": "hub", "key": "token"}
    result = reconcile_cache(
        ModelCache.model_validate(raw), _typed(THREE[:1]), observed_objects(_owned("a"))
    )
    assert _manifests(result, "Secret") == []
    assert all("references" not in o.object["spec"] for o in result.objects)
    [(_, job)] = _manifests(result, "Job")
    env = job["spec"]["forProvider"]["manifest"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hub", "key": "token"}},
    } in env


BOUND = {resource_key("a", "pvc"): _observed_object(PVC, {"phase": "Bound"})}
JOB_DONE = {
    **BOUND,
    **_owned("a"),
    resource_key("a", "download"): _observed_object(
        JOB, {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
    ),
}
JOB_FAILED = {
    **BOUND,
    **_owned("a"),
    resource_key("a", "download"): _observed_object(
        JOB,
        {
            "failed": 5,
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }
            ],
        },
    ),
}
STAGED = "Qwen/Qwen3-8B@main staged in PVC " + PVC
READY_ENTRY = {
    "name": "a",
    "phase": "Ready",
    "message": STAGED,
    "source": "Qwen/Qwen3-8B@main",
    "layout": "HubCache",
}
READY_BEFORE = {"clusters": [READY_ENTRY]}
# What an earlier release left: Ready for the same source, staged flat (no layout).
READY_FLAT = {"clusters": [{k: v for k, v in READY_ENTRY.items() if k != "layout"}]}

# observed, previous status -> phase, message, summary, ArtifactReady (reason, status), kinds composed
STATUS_TABLE = [
    (
        "none observed",
        {},
        None,
        "Pending",
        f"waiting for PVC {PVC} and download Job",
        ("Hydrating", "False", "staging on a"),
        ["PersistentVolumeClaim", "ConfigMap"],
    ),
    (
        "owner observed",
        _owned("a"),
        None,
        "Pending",
        f"waiting for PVC {PVC} and download Job",
        ("Hydrating", "False", "staging on a"),
        ["PersistentVolumeClaim", "ConfigMap", "Job"],
    ),
    (
        "PVC bound",
        {**BOUND, **_owned("a")},
        None,
        "Hydrating",
        f"downloading Qwen/Qwen3-8B@main into PVC {PVC}",
        ("Hydrating", "False", "staging on a"),
        ["PersistentVolumeClaim", "ConfigMap", "Job"],
    ),
    (
        "Job complete",
        JOB_DONE,
        None,
        "Ready",
        STAGED,
        ("Staged", "True", "staged on a"),
        ["PersistentVolumeClaim"],
    ),
    (
        "Job failed",
        JOB_FAILED,
        None,
        "Failed",
        "download Job ml-team-qwen-download-",
        ("Failed", "False", "failed on a"),
        ["PersistentVolumeClaim", "ConfigMap", "Job"],
    ),
    (
        "Job gone after Ready",
        BOUND,
        READY_BEFORE,
        "Ready",
        STAGED,
        ("Staged", "True", "staged on a"),
        ["PersistentVolumeClaim"],
    ),
]


@pytest.mark.parametrize(
    ("observed", "before", "phase", "message", "artifact", "kinds"),
    [row[1:] for row in STATUS_TABLE],
    ids=[row[0] for row in STATUS_TABLE],
)
def test_status_from_observed_objects(
    observed: dict[str, Any],
    before: dict[str, Any] | None,
    phase: str,
    message: str,
    artifact: tuple[str, str, str],
    kinds: list[str],
) -> None:
    result = reconcile_cache(_cache(status=before), _typed(THREE[:1]), observed_objects(observed))
    [entry] = result.status.to_wire()["clusters"]
    assert (entry["name"], entry["phase"]) == ("a", phase)
    assert entry["message"].startswith(message)
    assert result.status.to_wire()["summary"] == {"ready": "1/1" if phase == "Ready" else "0/1"}
    reason, status, text = artifact
    assert [condition_wire(c) for c in result.conditions] == [
        {
            "type": "ClustersMatched",
            "status": "True",
            "reason": "Matched",
            "message": "clusters: a",
        },
        {"type": "ArtifactReady", "status": status, "reason": reason, "message": text},
    ]
    assert result.ready is (phase == "Ready")
    composed = [o.object["spec"]["forProvider"]["manifest"]["kind"] for o in result.objects]
    assert composed == kinds


def test_failed_job_message_carries_the_job_condition() -> None:
    result = reconcile_cache(_cache(), _typed(THREE[:1]), observed_objects(JOB_FAILED))
    assert result.status.to_wire()["clusters"][0]["message"].endswith(
        ": Job has reached the specified backoff limit"
    )


def test_partial_when_one_of_two_is_ready() -> None:
    result = reconcile_cache(_cache(status=READY_BEFORE), _typed(THREE))
    assert result.status.to_wire()["summary"] == {"ready": "1/2"}
    assert condition_wire(result.conditions[1]) == {
        "type": "ArtifactReady",
        "status": "False",
        "reason": "Partial",
        "message": "1/2 ready; staging on b",
    }
    assert not result.ready


def test_ready_is_not_kept_for_another_revision() -> None:
    result = reconcile_cache(
        _cache(status=READY_BEFORE, name="qwen"), _typed(THREE[:1]), observed_objects(BOUND)
    )
    assert result.status.to_wire()["clusters"][0]["phase"] == "Ready"
    raw = cache(match_labels={"tier": "gpu"})
    raw["spec"]["huggingFace"]["revision"] = "v2"
    raw["status"] = READY_BEFORE
    moved = reconcile_cache(
        ModelCache.model_validate(raw), _typed(THREE[:1]), observed_objects(BOUND)
    )
    assert moved.status.to_wire()["clusters"][0]["phase"] == "Hydrating"
    # Staging again starts with the new source's owner; its Job follows once that is observed.
    [(_, owner)] = _manifests(moved, "ConfigMap")
    assert owner["spec"]["forProvider"]["manifest"]["metadata"]["name"] != JOB


def test_a_cache_staged_flat_by_an_earlier_release_is_staged_again() -> None:
    # Same source, but the entry carries no layout: its PVC holds a flat directory that
    # `--model=<repo id>` cannot load, so the cluster stages again (a new owner and Job).
    result = reconcile_cache(_cache(status=READY_FLAT), _typed(THREE[:1]), observed_objects(BOUND))
    [entry] = result.status.to_wire()["clusters"]
    assert (entry["phase"], entry["layout"]) == ("Hydrating", "HubCache")
    assert [e.message for e in result.events] == ["Staging Qwen/Qwen3-8B@main on cluster a"]
    assert len(_manifests(result, "ConfigMap")) == 1
    # The scheduler does not count it warm meanwhile.
    assert _cache(status=READY_FLAT).staged_on() == []
    assert _cache(status=READY_BEFORE).staged_on() == ["a"]
    # Staged again, the entry is kept Ready with the layout.
    done = reconcile_cache(
        _cache(status=result.status), _typed(THREE[:1]), observed_objects(JOB_DONE)
    )
    assert done.status.to_wire()["clusters"][0]["phase"] == "Ready"
    kept = reconcile_cache(_cache(status=done.status), _typed(THREE[:1]))
    assert kept.status.to_wire()["clusters"][0]["phase"] == "Ready"
    assert _manifests(kept, "ConfigMap") == []


def test_no_matching_cluster_is_no_clusters() -> None:
    result = reconcile_cache(_cache(), _typed(THREE[2:]))
    assert result.objects == [] and result.status.to_wire() == {
        "summary": {"ready": "0/0"},
        "clusters": [],
    }
    assert [(c.type, c.status, c.reason) for c in result.conditions] == [
        ("ClustersMatched", "False", "NoClusters"),
        ("ArtifactReady", "False", "NoClusters"),
    ]
    assert not result.ready


def test_absent_selector_is_every_ready_cluster() -> None:
    raw = cache()
    unready = _cluster("d", "gpu")
    unready["status"]["conditions"][0]["status"] = "False"
    result = reconcile_cache(ModelCache.model_validate(raw), _typed([*THREE, unready]))
    assert [c["name"] for c in result.status.to_wire()["clusters"]] == ["a", "b", "c"]


def test_cluster_without_storage_class_cannot_host_the_cache() -> None:
    clusters = [_cluster("a", "gpu"), _cluster("b", "gpu", storage_class=None)]
    result = reconcile_cache(_cache(), _typed(clusters))
    assert {o.cluster for o in result.objects} == {"a"}
    entry = result.status.to_wire()["clusters"][1]
    assert entry["phase"] == "Failed"
    assert entry["message"] == (
        "InferenceCluster b has no cache storage class: set "
        "spec.cluster.existing.cache.storageClassName or publish status.cache.storageClassName"
    )


def test_published_storage_class_is_used_when_spec_has_none() -> None:
    c = _cluster("a", "gpu", storage_class=None)
    c["status"]["cache"] = {"storageClassName": "published-rwx"}
    result = reconcile_cache(_cache(), _typed([c]))
    [(_, pvc)] = _manifests(result, "PersistentVolumeClaim")
    assert pvc["spec"]["forProvider"]["manifest"]["spec"]["storageClassName"] == "published-rwx"
    both = copy.deepcopy(c)
    both["spec"]["cluster"]["existing"]["cache"] = {"storageClassName": "spec-rwx"}
    [(_, pvc)] = _manifests(reconcile_cache(_cache(), _typed([both])), "PersistentVolumeClaim")
    assert pvc["spec"]["forProvider"]["manifest"]["spec"]["storageClassName"] == "spec-rwx"


def test_events_on_start_and_completion_only_on_transitions() -> None:
    started = reconcile_cache(_cache(), _typed(THREE[:1]), observed_objects(BOUND))
    assert [(e.severity, e.message) for e in started.events] == [
        ("Normal", "Staging Qwen/Qwen3-8B@main on cluster a")
    ]
    again = reconcile_cache(
        _cache(status=started.status), _typed(THREE[:1]), observed_objects(BOUND)
    )
    assert again.events == []
    done = reconcile_cache(
        _cache(status=started.status), _typed(THREE[:1]), observed_objects(JOB_DONE)
    )
    assert [(e.severity, e.message) for e in done.events] == [
        ("Normal", "Staged Qwen/Qwen3-8B@main on cluster a")
    ]
    failed = reconcile_cache(
        _cache(status=started.status), _typed(THREE[:1]), observed_objects(JOB_FAILED)
    )
    assert [e.severity for e in failed.events] == ["Warning"]


def test_a_staged_cluster_that_blips_not_ready_keeps_its_pvc() -> None:
    blip = _cluster("a", "gpu")
    blip["status"]["conditions"][0]["status"] = "False"
    result = reconcile_cache(_cache(status=READY_BEFORE), _typed([blip]))
    assert [o.key for o in result.objects] == ["cache-pvc-a"]
    fresh = reconcile_cache(_cache(), _typed([blip]))
    assert fresh.objects == []


def test_a_long_remote_message_is_cut_to_the_status_bound() -> None:
    failed = copy.deepcopy(JOB_FAILED)
    condition = failed[resource_key("a", "download")]["status"]["atProvider"]["manifest"]
    condition["status"]["conditions"][0]["message"] = "x" * 5000
    result = reconcile_cache(_cache(), _typed(THREE[:1]), observed_objects(failed))
    message = result.status.to_wire()["clusters"][0]["message"]
    assert len(message) == 1024 and message.endswith("...")
    # What the function writes must pass the XRD's own schema.
    raw = cache(match_labels={"tier": "gpu"})
    raw["status"] = result.status.to_wire()
    ModelCache.model_validate(raw)


def test_an_old_jobs_completion_is_not_the_new_source_staged() -> None:
    # The revision moved: the Object under the same key still reports the previous Job.
    raw = cache(match_labels={"tier": "gpu"})
    raw["spec"]["huggingFace"]["revision"] = "v2"
    result = reconcile_cache(
        ModelCache.model_validate(raw), _typed(THREE[:1]), observed_objects(JOB_DONE)
    )
    assert result.status.to_wire()["clusters"][0]["phase"] == "Hydrating"
    # The old source's owner is no longer composed: Crossplane deletes it, and the garbage
    # collector the old Job with its pods, so two Jobs never write one PVC.
    hf = ModelCache.model_validate(raw).spec.hugging_face
    assert hf is not None
    assert set(_owned("a")) & {o.key for o in result.objects} == set()
    new_owner = _observed_object(cache_names(_cache()).job(hf), {}, uid="uid-new")
    observed = {**JOB_DONE, resource_key("a", owner_part(hf)): new_owner}
    result = reconcile_cache(
        ModelCache.model_validate(raw), _typed(THREE[:1]), observed_objects(observed)
    )
    [(_, job)] = _manifests(result, "Job")
    manifest = job["spec"]["forProvider"]["manifest"]
    assert manifest["metadata"]["name"] != JOB
    assert manifest["metadata"]["ownerReferences"][0]["uid"] == "uid-new"


# crossplane-runtime v2.0.0-rc.1 (the version provider-kubernetes v1.2.1 pins),
# pkg/reconciler/managed/policies.go, defaultSupportedManagementPolicies: the supported sets
# that keep Create (a failed Job deleted by its TTL is recreated) and leave out Delete.
SUPPORTED_WITH_CREATE_WITHOUT_DELETE = [
    {"Observe", "Create", "Update", "LateInitialize"},
    {"Observe", "Create", "Update"},
    {"Observe", "Create", "LateInitialize"},
    {"Observe", "Create"},
]


def test_the_job_objects_policies_are_a_supported_set_without_delete() -> None:
    assert set(JOB_MANAGEMENT_POLICIES) in SUPPORTED_WITH_CREATE_WITHOUT_DELETE
    result = reconcile_cache(_cache(), _typed(THREE[:1]), observed_objects(_owned("a")))
    policies = {o.key: o.object["spec"].get("managementPolicies") for o in result.objects}
    # Only the Job's Object: the PVC and the owner are deleted by the provider as usual
    # (a PVC has no dependents; the owner's deletion is what collects the Job and its pods).
    assert [k for k, v in policies.items() if v is not None] == ["cache-download-a"]
