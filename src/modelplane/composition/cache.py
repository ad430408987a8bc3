"""What a ModelCache composes on each cluster of its footprint (docs/composition.md, caches).

Per cluster, each delivered through that cluster's provider config exactly like a
replica's objects (docs/composition.md, "Objects, in order"): the PVC every serving pod mounts, a
short-lived
Secret carrying the Hugging Face token (only with ``authSecret``, only while staging)
and the download Job. Pure: the same cache, cluster and stage always give the same
objects. The phase of each cluster is computed in ``modelplane.reconcile.cache``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from modelplane.api import InferenceCluster, ModelCache
from modelplane.api.modelcache import DEFAULT_REVISION, HuggingFaceSource
from modelplane.composition.containers import CACHE_MOUNT_PATH, CACHE_VOLUME
from modelplane.composition.delivery import deliver
from modelplane.composition.marker import MARKER
from modelplane.composition.names import cache_pvc_name
from modelplane.composition.types import REMOTE_NAMESPACE, Json
from modelplane.naming import CACHE_LABEL, CACHE_NAMESPACE_LABEL, dns_name

# The download image: the vLLM image the examples already pull for serving, so a cluster
# that can serve the model can also stage it (no second image to mirror). It ships the
# huggingface_hub CLI (docs/composition.md cites the sources); its entrypoint starts the API
# server, hence an explicit command.
DOWNLOAD_IMAGE = "vllm/vllm-openai:v0.23.0"
DOWNLOAD_CONTAINER = "download"
TOKEN_KEY = "HF_TOKEN"

# A failing download (hub outage, bad token) is retried this many times, then the Job
# fails and the cluster reads Failed; a finished Job is deleted after an hour.
BACKOFF_LIMIT = 4
TTL_SECONDS_AFTER_FINISHED = 3600


# Resource keys of one cluster's cache objects (the Crossplane desired-state keys).
KEY_PVC = "pvc"
KEY_TOKEN = "token"
KEY_DOWNLOAD = "download"

# Remote scripts. Repository, revision and source come in through the environment and
# are always quoted, so no user text is ever parsed by the shell.
DOWNLOAD_SCRIPT = f"""set -eu
marker={MARKER}
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$MODELPLANE_CACHE_SOURCE" ]; then
  echo "already staged: $MODELPLANE_CACHE_SOURCE"
  exit 0
fi
rm -f "$marker"
# `hf` since huggingface_hub 0.34; `huggingface-cli` (same flags) before it.
cli=hf
command -v hf >/dev/null 2>&1 || cli=huggingface-cli
"$cli" download "$MODELPLANE_CACHE_REPO" --revision "$MODELPLANE_CACHE_REVISION" \\
  --local-dir {CACHE_MOUNT_PATH}
printf '%s' "$MODELPLANE_CACHE_SOURCE" > "$marker.tmp"
# The serving pods' wait runs as a non-root user: it must be able to see the marker.
chmod a+rx {CACHE_MOUNT_PATH} 2>/dev/null || true
chmod a+r "$marker.tmp"
mv "$marker.tmp" "$marker"
echo "staged: $MODELPLANE_CACHE_SOURCE"
"""


@dataclass(frozen=True, slots=True)
class Stage:
    """What to compose on one cluster: the PVC always, the Job and token while staging."""

    download: bool
    token: bool


def resource_key(cluster: str, part: str) -> str:
    """The desired-state key of one cache object on ``cluster``."""
    return f"cache-{part}-{cluster}"


def source_of(hf: HuggingFaceSource) -> str:
    """``<repo>@<revision>``: what the PVC holds once staged (the marker's content)."""
    return hf.source


def _source_digest(hf: HuggingFaceSource) -> str:
    return hashlib.sha256(source_of(hf).encode("utf-8")).hexdigest()[:8]


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

    @property
    def token_secret(self) -> str:
        """The remote Secret holding the token while the cache is staged."""
        return dns_name(self._scope, "hf-token")

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
        "metadata": {"name": names.pvc, "namespace": REMOTE_NAMESPACE, "labels": _labels(names)},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": f"{hf.size_gib}Gi"}},
        },
    }


def token_secret(names: CacheNames) -> Json:
    """The remote Secret's manifest: no data here, the provider patches it in (``token_refs``)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": names.token_secret,
            "namespace": REMOTE_NAMESPACE,
            "labels": _labels(names),
        },
        "type": "Opaque",
    }


def token_references(names: CacheNames, hf: HuggingFaceSource) -> list[Json]:
    """provider-kubernetes ``spec.references``: copy the control-plane Secret's key.

    The provider reads the referenced object on the control plane and sets the value at
    ``spec.forProvider.manifest.<toFieldPath>`` before applying (provider-kubernetes
    v1.2.1, apis/namespaced/object/v1alpha1/types.go), so the token is never in a
    composed manifest. ``data`` values are base64 on both sides: copied as they are.
    """
    assert hf.auth_secret is not None
    return [
        {
            "patchesFrom": {
                "apiVersion": "v1",
                "kind": "Secret",
                "name": hf.auth_secret.name,
                "namespace": names.namespace,
                "fieldPath": f"data[{hf.auth_secret.key}]",
            },
            "toFieldPath": f"data.{TOKEN_KEY}",
        }
    ]


def download_job(names: CacheNames, hf: HuggingFaceSource) -> Json:
    """The Job that fills the PVC once: idempotent by the marker, bounded retries, TTL."""
    env: list[Json] = [
        {"name": "MODELPLANE_CACHE_REPO", "value": hf.repo},
        {"name": "MODELPLANE_CACHE_REVISION", "value": hf.revision or DEFAULT_REVISION},
        {"name": "MODELPLANE_CACHE_SOURCE", "value": source_of(hf)},
        {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
    ]
    if hf.auth_secret is not None:
        env.append(
            {
                "name": TOKEN_KEY,
                "valueFrom": {"secretKeyRef": {"name": names.token_secret, "key": TOKEN_KEY}},
            }
        )
    labels = _labels(names)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": names.job(hf), "namespace": REMOTE_NAMESPACE, "labels": labels},
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
    """The delivered objects of ``cache`` on ``cluster``, keyed, in order PVC, token, Job."""
    hf = cache.spec.hugging_face
    assert hf is not None  # MC-01: HuggingFace is the only source
    names = cache_names(cache)
    parts: list[tuple[str, Json, list[Json] | None]] = [
        (KEY_PVC, cache_pvc(names, hf, storage_class), None)
    ]
    if stage.token and hf.auth_secret is not None:
        parts.append((KEY_TOKEN, token_secret(names), token_references(names, hf)))
    if stage.download:
        parts.append((KEY_DOWNLOAD, download_job(names, hf), None))
    out: list[tuple[str, Json]] = []
    for part, manifest, references in parts:
        key = resource_key(cluster, part)
        obj = deliver(
            names.delivery_object(cluster, part), names.namespace, key, manifest, provider_config
        )
        if references is not None:
            obj["spec"]["references"] = references
        out.append((key, obj))
    return out
