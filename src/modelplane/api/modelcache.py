"""ModelCache: weights staged once per matching cluster."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from modelplane.api.base import (
    GROUP_VERSION,
    FreeForm,
    KubeModel,
    OpenModel,
    list_map,
    rule,
    validations,
)
from modelplane.api.meta import CONDITIONS_LIST, Condition, LabelSelector, ObjectMeta

MC_01 = rule(
    "MC-01",
    "self.source != 'HuggingFace' || has(self.huggingFace)",
    "spec.huggingFace is required when spec.source is HuggingFace.",
)


# The revision the hub serves when none is named.
DEFAULT_REVISION = "main"


class AuthSecret(KubeModel):
    """The Secret key holding a Hugging Face token."""

    name: str = Field(min_length=1, max_length=253)
    # A Secret data key (the API server's rule); it is also a field path segment.
    key: str = Field(default="HF_TOKEN", max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")


class HuggingFaceSource(KubeModel):
    """A Hugging Face repository: what the download Job fetches."""

    repo: str = Field(min_length=1, max_length=256)
    revision: str | None = Field(default=None, min_length=1, max_length=256)
    auth_secret: AuthSecret | None = None
    size_gib: int = Field(alias="sizeGiB", ge=1, le=100000)

    @property
    def source(self) -> str:
        """``<repo>@<revision>`` (revision ``main`` when unset): what a staged PVC holds."""
        return f"{self.repo}@{self.revision or DEFAULT_REVISION}"


class ModelCacheSpec(KubeModel):
    """What to stage and where."""

    model_config = ConfigDict(json_schema_extra=validations(MC_01))

    source: Literal["HuggingFace"]
    hugging_face: HuggingFaceSource | None = None
    cluster_selector: LabelSelector | None = Field(
        default=None, description="The cache's footprint; absent or empty: every cluster."
    )
    crossplane: FreeForm | None = None


CachePhase = Literal["Pending", "Hydrating", "Ready", "Failed"]

# How a staged PVC lays the weights out: the Hugging Face hub cache
# (models--<org>--<name>/snapshots/<commit>/), so an engine loads them by repo id. An entry
# without it was written by an earlier release, which staged a flat directory: that PVC
# is staged again (docs/composition.md, "What a ModelCache composes").
CacheLayout = Literal["HubCache"]
HUB_CACHE_LAYOUT: CacheLayout = "HubCache"

# Bounds of the status the cache function writes (docs/api.md): one entry per cluster of
# the footprint, at most MAX_CACHE_CLUSTERS of them (about 300 KB of status at most).
MAX_CACHE_CLUSTERS = 1024
MAX_CACHE_MESSAGE = 1024


class CacheClusterStatus(KubeModel):
    """The staging state of the cache on one cluster (composition.md, caches)."""

    name: str = Field(min_length=1, max_length=253)
    phase: CachePhase
    message: str | None = Field(default=None, max_length=MAX_CACHE_MESSAGE)
    source: str | None = Field(
        default=None,
        max_length=1024,
        description="<repo>@<revision> the phase refers to; Ready is kept only for the same source.",
    )
    layout: CacheLayout | None = Field(
        default=None,
        description="How the PVC lays the weights out; Ready is kept only for HubCache.",
    )


class CacheSummary(KubeModel):
    """The printer column's value."""

    ready: str | None = Field(default=None, max_length=16, description="<ready>/<total> clusters.")


class ModelCacheStatus(OpenModel):
    """Written by the cache function; read back to keep Ready once reached, and by fill."""

    conditions: (
        Annotated[tuple[Condition, ...], Field(json_schema_extra=CONDITIONS_LIST)] | None
    ) = None
    summary: CacheSummary | None = None
    clusters: (
        Annotated[
            tuple[CacheClusterStatus, ...],
            Field(max_length=MAX_CACHE_CLUSTERS, json_schema_extra=list_map("name")),
        ]
        | None
    ) = None


class ModelCache(KubeModel):
    """Weights staged once per matching cluster."""

    def staged_on(self) -> list[str]:
        """The clusters whose status entry is Ready for the current source, in the hub layout."""
        hf = self.spec.hugging_face
        entries = self.status.clusters if self.status is not None else None
        if hf is None:
            return []
        return [
            e.name
            for e in entries or ()
            if e.phase == "Ready" and e.source == hf.source and e.layout == HUB_CACHE_LAYOUT
        ]

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["ModelCache"] = "ModelCache"
    metadata: ObjectMeta
    spec: ModelCacheSpec
    status: ModelCacheStatus | None = None
