"""ModelCache: weights staged once per matching cluster."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from modelplane.api.base import GROUP_VERSION, FreeForm, KubeModel, OpenModel, rule, validations
from modelplane.api.meta import CONDITIONS_LIST, Condition, LabelSelector, ObjectMeta

MC_01 = rule(
    "MC-01",
    "self.source != 'HuggingFace' || has(self.huggingFace)",
    "spec.huggingFace is required when spec.source is HuggingFace.",
)


class AuthSecret(KubeModel):
    """The Secret key holding a Hugging Face token."""

    name: str = Field(min_length=1)
    key: str = "HF_TOKEN"


class HuggingFaceSource(KubeModel):
    """A Hugging Face repository. Not read."""

    repo: str = Field(min_length=1)
    revision: str | None = None
    auth_secret: AuthSecret | None = None
    size_gib: int = Field(alias="sizeGiB", ge=1, le=100000)


class ModelCacheSpec(KubeModel):
    """What to stage and where."""

    model_config = ConfigDict(json_schema_extra=validations(MC_01))

    source: Literal["HuggingFace"]
    hugging_face: HuggingFaceSource | None = None
    cluster_selector: LabelSelector | None = Field(
        default=None, description="The cache's footprint; absent or empty: every cluster."
    )
    crossplane: FreeForm | None = None


class ModelCacheStatus(OpenModel):
    """Not read: placement never waits for hydration."""

    conditions: Annotated[list[Condition], Field(json_schema_extra=CONDITIONS_LIST)] | None = None


class ModelCache(KubeModel):
    """Weights staged once per matching cluster."""

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["ModelCache"] = "ModelCache"
    metadata: ObjectMeta
    spec: ModelCacheSpec
    status: ModelCacheStatus | None = None
