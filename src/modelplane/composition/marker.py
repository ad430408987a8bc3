"""The completion marker of a staged ModelCache, and the serving pods' wait for it.

Its own module so that ``pods`` can use it without importing the cache composition.
"""

from __future__ import annotations

from modelplane.composition.containers import CACHE_MOUNT_PATH, CACHE_VOLUME
from modelplane.composition.types import Json

# Written last by the download Job, after every file is in place: its content is the
# source (`<repo>@<revision>`) the PVC holds, in the hub cache layout. Its name is new with
# that layout: a PVC an earlier release staged flat holds only LEGACY_MARKER, so no serving
# pod starts on it before the Job has staged it again.
MARKER = f"{CACHE_MOUNT_PATH}/.modelplane-hub-complete"
LEGACY_MARKER = f"{CACHE_MOUNT_PATH}/.modelplane-complete"
WAIT_CONTAINER = "wait-for-model-cache"
# The wait image of the serving pods' init container: small, pinned, has /bin/sh.
WAIT_IMAGE = "busybox:1.37.0"
# `nobody`: the wait only reads the marker, which the Job leaves world-readable.
WAIT_USER = 65534

# The serving pods' wait: one check every 10 s; after 24 h the init container exits 1,
# so the kubelet restarts it (with back-off) and the pod shows Init:Error instead of
# waiting silently forever.
WAIT_PERIOD_SECONDS = 10
WAIT_LIMIT_SECONDS = 86400


WAIT_SCRIPT = f"""waited=0
until [ -f {MARKER} ]; do
  if [ "$waited" -ge {WAIT_LIMIT_SECONDS} ]; then
    echo "model cache not complete after {WAIT_LIMIT_SECONDS}s" >&2
    exit 1
  fi
  echo "waiting for the model cache to be staged ({MARKER})"
  sleep {WAIT_PERIOD_SECONDS}
  waited=$((waited + {WAIT_PERIOD_SECONDS}))
done
"""


def wait_for_cache_container() -> Json:
    """The serving pods' init container: the engine starts only on a complete cache."""
    return {
        "name": WAIT_CONTAINER,
        "image": WAIT_IMAGE,
        "command": ["/bin/sh", "-c", WAIT_SCRIPT],
        "volumeMounts": [{"name": CACHE_VOLUME, "mountPath": CACHE_MOUNT_PATH, "readOnly": True}],
        # Small and explicit, so a namespace quota that requires resources or the
        # `restricted` Pod Security level never rejects the serving pod because of it.
        "resources": {
            "requests": {"cpu": "10m", "memory": "16Mi"},
            "limits": {"memory": "32Mi"},
        },
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": WAIT_USER,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
