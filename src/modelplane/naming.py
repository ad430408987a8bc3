"""Names of composed objects: DNS labels of bounded length, stable and unique (Decision 6)."""

from __future__ import annotations

import hashlib
import re

_NOT_DNS = re.compile(r"[^a-z0-9-]")


def _hash5(full: str) -> str:
    return hashlib.sha256(full.encode("utf-8")).hexdigest()[:5]


def child_name(*parts: str, max_length: int = 63) -> str:
    """Crossplane's child_name rule: parts joined by '-', cut, then a 5-hex-digit hash.

    No lowercasing or character mapping (api.md §5.2): the PVC of a ModelCache and the
    provider config of a cluster are named by this rule by whoever creates them.
    """
    full = "-".join(parts)
    prefix = full[: max_length - 6].rstrip("-")
    return f"{prefix}-{_hash5(full)}"


def dns_name(*parts: str, max_length: int = 63) -> str:
    """A DNS-1035 label of at most ``max_length`` characters for a composed object (composition.md §2)."""
    full = "-".join(parts)
    visible = _NOT_DNS.sub("-", full.lower())
    if not visible[:1].isalpha():
        visible = "mp-" + visible
    prefix = visible[: max_length - 6].rstrip("-")
    return f"{prefix}-{_hash5(full)}"


def replica_name(deployment: str, cluster: str, index: int) -> str:
    """The ModelReplica (and ModelEndpoint) name of replica (cluster, index) (scheduling.md §2.3)."""
    full = f"{deployment}-{cluster}-{index}"
    return f"{deployment[:57].rstrip('-')}-{_hash5(full)}"


def replica_key(cluster: str, index: int) -> str:
    """The Crossplane resource key of a replica in the deployment function's desired state."""
    return f"replica-{cluster}-{index}"


def endpoint_key(cluster: str, index: int) -> str:
    """The Crossplane resource key of an endpoint in the deployment function's desired state."""
    return f"endpoint-{cluster}-{index}"
