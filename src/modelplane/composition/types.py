"""Shared type aliases of the composition package."""

from __future__ import annotations

from typing import Any, Literal

# A Kubernetes object (or part of one) as plain JSON data.
Json = dict[str, Any]

Stack = Literal["Standard", "Dynamo"]
WorkloadKind = Literal["Deployment", "LeaderWorkerSet", "PodCliqueSet"]

# Every remote namespaced object lives in the workload cluster's `default` namespace (§1).
REMOTE_NAMESPACE = "default"
