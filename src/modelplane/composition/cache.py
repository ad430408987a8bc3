"""What a ModelCache composes on each cluster of its footprint (docs/composition.md, caches).

Per cluster, each delivered through that cluster's provider config exactly like a
replica's objects (docs/composition.md, "Objects, in order"): the PVC every serving pod mounts
and, while staging, the download Job and the ConfigMap that owns it. Pure: the same cache,
cluster, stage and owner UID always give the same objects. The phase of each cluster is
computed in ``modelplane.reconcile.cache``.

No token passes through here: ``authSecret`` names a Secret the platform places on each
cluster, and the Job reads it there by ``secretKeyRef`` (docs/composition.md,
"What a ModelCache composes").
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from modelplane.api import InferenceCluster, ModelCache
from modelplane.api.modelcache import DEFAULT_REVISION, HUB_CACHE_LAYOUT, HuggingFaceSource
from modelplane.composition.containers import CACHE_MOUNT_PATH, CACHE_VOLUME, HF_HUB_CACHE
from modelplane.composition.delivery import deliver
from modelplane.composition.marker import LEGACY_MARKER, MARKER
from modelplane.composition.names import cache_pvc_name
from modelplane.composition.namespaces import SHARED_NAMESPACE
from modelplane.composition.types import Json
from modelplane.naming import CACHE_LABEL, CACHE_NAMESPACE_LABEL, dns_name

# The download image: the vLLM image the examples already pull for serving, so a cluster
# that can serve the model can also stage it (no second image to mirror). It ships the
# huggingface_hub CLI (docs/composition.md cites the sources); its entrypoint starts the API
# server, hence an explicit command.
DOWNLOAD_IMAGE = "vllm/vllm-openai:v0.23.0"
DOWNLOAD_CONTAINER = "download"
# The environment variable huggingface_hub reads the token from.
TOKEN_ENV = "HF_TOKEN"

# A failing download (hub outage, bad token) is retried this many times, then the Job
# fails and the cluster reads Failed; a finished Job is deleted after an hour.
BACKOFF_LIMIT = 4
TTL_SECONDS_AFTER_FINISHED = 3600

# The download Job's Object never deletes the Job: provider-kubernetes v1.2.1 deletes
# without a propagation policy, and for batch/v1 the API server then orphans the pods
# (docs/composition.md, "What a ModelCache composes"). The Job goes with its owner ConfigMap
# instead, or by its TTL. crossplane-runtime v2.0.0-rc.1 supports exactly this set
# (pkg/reconciler/managed/policies.go, defaultSupportedManagementPolicies).
JOB_MANAGEMENT_POLICIES = ("Observe", "Create", "Update", "LateInitialize")


# Caches still stage in the shared namespace: a replica using one keeps it too
# (composition/namespaces.py), as a pod mounts only a PVC of its own namespace.
CACHE_NAMESPACE = SHARED_NAMESPACE

# Resource keys of one cluster's cache objects (the Crossplane desired-state keys).
KEY_PVC = "pvc"
KEY_DOWNLOAD = "download"
KEY_OWNER = "owner"
# Resource keys of the token Objects an earlier release composed (a copy of the token in
# their spec): the function never keeps one, so Crossplane deletes them.
LEGACY_TOKEN_PREFIX = "cache-token-"

# Remote scripts. Repository, revision and source come in through the environment and
# are always quoted, so no user text is ever parsed by the shell.
#
# The weights land in the Hugging Face hub cache layout under HF_HUB_CACHE (the mount):
# models--<org>--<name>/{blobs,refs,snapshots/<commit>}, so an engine given
# `--model=<repo id>` and the same HF_HUB_CACHE finds them offline. The PVC holds one
# repository: anything else at its root (a flat directory an earlier release staged, a
# previous repository) is removed first, so the new copy fits in sizeGiB.
# huggingface_hub writes refs/<revision> only for a branch or tag (v0.36.2,
# src/huggingface_hub/_snapshot_download.py), and an engine given no --revision resolves
# refs/main offline: refs/main is pointed at the staged commit when another revision is
# staged, so `main` in this cache is what the cache pins.
DOWNLOAD_SCRIPT = f"""set -eu
marker={MARKER}
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$MODELPLANE_CACHE_SOURCE" ]; then
  echo "already staged: $MODELPLANE_CACHE_SOURCE"
  exit 0
fi
rm -f "$marker" {LEGACY_MARKER}
for entry in {CACHE_MOUNT_PATH}/* {CACHE_MOUNT_PATH}/.[!.]*; do
  case "${{entry##*/}}" in
    "$MODELPLANE_CACHE_FOLDER" | .locks | lost+found | "*" | ".[!.]*") ;;
    *) echo "removing $entry (not part of $MODELPLANE_CACHE_SOURCE)"; rm -rf "$entry" ;;
  esac
done
# `hf` since huggingface_hub 0.34; `huggingface-cli` (same flags) before it.
cli=hf
command -v hf >/dev/null 2>&1 || cli=huggingface-cli
"$cli" download "$MODELPLANE_CACHE_REPO" --revision "$MODELPLANE_CACHE_REVISION"
repo={CACHE_MOUNT_PATH}/"$MODELPLANE_CACHE_FOLDER"
if [ -n "$MODELPLANE_CACHE_REF" ]; then
  commit=$(cat "$repo/refs/$MODELPLANE_CACHE_REF")
else
  commit=$MODELPLANE_CACHE_REVISION
fi
if [ ! -d "$repo/snapshots/$commit" ]; then
  echo "no snapshot $commit of $MODELPLANE_CACHE_SOURCE under $repo" >&2
  exit 1
fi
if [ "$MODELPLANE_CACHE_REF" != main ]; then
  mkdir -p "$repo/refs"
  printf '%s' "$commit" > "$repo/refs/main"
fi
printf '%s' "$MODELPLANE_CACHE_SOURCE" > "$marker.tmp"
# The serving pods' wait runs as a non-root user: it must be able to see the marker.
chmod a+rx {CACHE_MOUNT_PATH} 2>/dev/null || true
chmod a+r "$marker.tmp"
mv "$marker.tmp" "$marker"
echo "staged: $MODELPLANE_CACHE_SOURCE (snapshot $commit)"
"""

# A full commit id, as huggingface_hub tells one from a branch or tag (REGEX_COMMIT_HASH,
# src/huggingface_hub/file_download.py): for it, no refs/ file is written.
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def repo_folder(repo: str) -> str:
    """The repository's folder in the hub cache: ``models--<org>--<name>``."""
    return "models--" + repo.replace("/", "--")


def revision_ref(revision: str) -> str:
    """The refs/ file the download writes for ``revision``; empty for a full commit id."""
    return "" if _COMMIT.match(revision) else revision


@dataclass(frozen=True, slots=True)
class Stage:
    """What to compose on one cluster: the PVC always; while staging, the Job's owner, and
    the Job itself once the owner's UID is observed (``owner_uid``)."""

    download: bool
    owner_uid: str | None = None


def resource_key(cluster: str, part: str) -> str:
    """The desired-state key of one cache object on ``cluster``."""
    return f"cache-{part}-{cluster}"


def owner_part(hf: HuggingFaceSource) -> str:
    """The owner ConfigMap's part: one per source, so a new source drops the old owner
    (and with it the old Job and its pods) instead of leaving two Jobs on one PVC."""
    return f"{KEY_OWNER}-{_source_digest(hf)}"


def source_of(hf: HuggingFaceSource) -> str:
    """``<repo>@<revision>``: what the PVC holds once staged (the marker's content)."""
    return hf.source


def _source_digest(hf: HuggingFaceSource) -> str:
    # The layout is part of it: a Job an earlier release started (flat layout) is not
    # adopted, its owner goes and takes it along, and a new Job stages the hub layout.
    staged = f"{HUB_CACHE_LAYOUT}:{source_of(hf)}"
    return hashlib.sha256(staged.encode("utf-8")).hexdigest()[:8]


def cache_storage_class(cluster: InferenceCluster) -> str | None:
    """The cluster's cache storage class: ``existing.cache`` first, then what it publishes."""
    existing = cluster.spec.cluster.existing
    if existing is not None and existing.cache is not None and existing.cache.storage_class_name:
        return existing.cache.storage_class_name
    status = cluster.status.cache if cluster.status is not None else None
    if status is not None and status.storage_class_name:
        return status.storage_class_name
    return None


@dataclass(frozen=True, slots=True)
class CacheNames:
    """The names of one cache's objects (one home for each formula)."""

    namespace: str
    cache: str

    @property
    def _scope(self) -> str:
        # "/" cannot occur in a namespace or a name, so no two caches share a scope.
        return f"{self.namespace}/{self.cache}"

    @property
    def pvc(self) -> str:
        """The PVC, named exactly as the serving pods mount it."""
        return cache_pvc_name(self.namespace, self.cache)

    def job(self, hf: HuggingFaceSource) -> str:
        """The download Job; a new source gets a new Job (a Job's template is immutable)."""
        return dns_name(self._scope, "download", _source_digest(hf))

    def delivery_object(self, cluster: str, part: str) -> str:
        """The provider-kubernetes Object carrying ``part`` for ``cluster``."""
        # "/" cannot occur in either name: cache "a-b" on cluster "c" and cache "a" on
        # cluster "b-c" hash differently (dns_name shows "/" as "-").
        return dns_name(f"{self.cache}/{cluster}", part)


def cache_names(cache: ModelCache) -> CacheNames:
    """The names of a cache's objects (namespace ``default`` when missing)."""
    return CacheNames(cache.metadata.namespace or "default", cache.metadata.name or "")


def _labels(names: CacheNames) -> dict[str, str]:
    return {CACHE_LABEL: names.cache, CACHE_NAMESPACE_LABEL: names.namespace}


def cache_pvc(names: CacheNames, hf: HuggingFaceSource, storage_class: str) -> Json:
    """The ReadWriteMany PVC every pod of every replica on the cluster mounts."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": names.pvc, "namespace": CACHE_NAMESPACE, "labels": _labels(names)},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": f"{hf.size_gib}Gi"}},
        },
    }


def download_owner(names: CacheNames, hf: HuggingFaceSource) -> Json:
    """The ConfigMap the download Job names as its owner (no data: its existence is the point).

    Deleting it is how the Job goes: the garbage collector deletes a dependent whose
    owners are all gone with background propagation, which takes the Job's pods too.
    """
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": names.job(hf),
            "namespace": CACHE_NAMESPACE,
            "labels": _labels(names),
        },
    }


def _owner_reference(names: CacheNames, hf: HuggingFaceSource, uid: str) -> Json:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": names.job(hf), "uid": uid}


def download_job(names: CacheNames, hf: HuggingFaceSource, owner_uid: str) -> Json:
    """The Job that fills the PVC once: idempotent by the marker, bounded retries, TTL.

    Owned by the ConfigMap ``download_owner`` (UID ``owner_uid``, as observed), so it goes,
    pods included, when that ConfigMap does.
    """
    revision = hf.revision or DEFAULT_REVISION
    env: list[Json] = [
        {"name": "MODELPLANE_CACHE_REPO", "value": hf.repo},
        {"name": "MODELPLANE_CACHE_REVISION", "value": revision},
        {"name": "MODELPLANE_CACHE_SOURCE", "value": source_of(hf)},
        {"name": "MODELPLANE_CACHE_FOLDER", "value": repo_folder(hf.repo)},
        {"name": "MODELPLANE_CACHE_REF", "value": revision_ref(revision)},
        {"name": HF_HUB_CACHE, "value": CACHE_MOUNT_PATH},
        {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
    ]
    if hf.auth_secret is not None:
        # The platform's Secret on the cluster itself: the token never leaves it.
        ref = {"name": hf.auth_secret.name, "key": hf.auth_secret.key}
        env.append({"name": TOKEN_ENV, "valueFrom": {"secretKeyRef": ref}})
    labels = _labels(names)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": names.job(hf),
            "namespace": CACHE_NAMESPACE,
            "labels": labels,
            "ownerReferences": [_owner_reference(names, hf, owner_uid)],
        },
        "spec": {
            "backoffLimit": BACKOFF_LIMIT,
            "ttlSecondsAfterFinished": TTL_SECONDS_AFTER_FINISHED,
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": DOWNLOAD_CONTAINER,
                            "image": DOWNLOAD_IMAGE,
                            "command": ["/bin/sh", "-c", DOWNLOAD_SCRIPT],
                            "env": env,
                            "volumeMounts": [{"name": CACHE_VOLUME, "mountPath": CACHE_MOUNT_PATH}],
                        }
                    ],
                    "volumes": [
                        {"name": CACHE_VOLUME, "persistentVolumeClaim": {"claimName": names.pvc}}
                    ],
                },
            },
        },
    }


def cache_objects(
    cache: ModelCache,
    cluster: str,
    provider_config: tuple[str, str],
    storage_class: str,
    stage: Stage,
) -> list[tuple[str, Json]]:
    """The delivered objects of ``cache`` on ``cluster``, keyed, in order PVC, owner, Job."""
    hf = cache.spec.hugging_face
    assert hf is not None  # MC-01: HuggingFace is the only source
    names = cache_names(cache)
    parts: list[tuple[str, Json]] = [(KEY_PVC, cache_pvc(names, hf, storage_class))]
    if stage.download:
        parts.append((owner_part(hf), download_owner(names, hf)))
        if stage.owner_uid is not None:
            parts.append((KEY_DOWNLOAD, download_job(names, hf, stage.owner_uid)))
    out: list[tuple[str, Json]] = []
    for part, manifest in parts:
        key = resource_key(cluster, part)
        policies = JOB_MANAGEMENT_POLICIES if part == KEY_DOWNLOAD else None
        obj = deliver(
            names.delivery_object(cluster, part),
            names.namespace,
            key,
            manifest,
            provider_config,
            policies,
        )
        out.append((key, obj))
    return out
