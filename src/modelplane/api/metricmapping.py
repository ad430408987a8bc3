"""MetricMapping: how a component's metrics join the modelplane_* vocabulary (docs/telemetry.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from modelplane.api.base import GROUP_VERSION, KubeModel, OpenModel
from modelplane.api.meta import CONDITIONS_LIST, Condition, ObjectMeta
from modelplane.api.telemetrydestination import METRIC_NAME

# A name of the vocabulary: only these leave a cluster unless a destination passes others.
VOCABULARY_NAME = r"^modelplane_[a-z0-9_]*[a-z0-9]$"
# What a source measures in, when not the base unit its target name claims.
FromUnit = Literal[
    "Milliseconds", "Microseconds", "Nanoseconds", "Mebibytes", "Percent", "Millijoules"
]


class MetricRename(KubeModel):
    """One source metric renamed onto the vocabulary, converted to the base unit."""

    source: str = Field(
        alias="from",
        max_length=255,
        pattern=METRIC_NAME,
        description="The metric's name as the component exposes it (a counter by its family "
        "name; the _total sample matches too). Held to metric-name characters: it is quoted "
        "into the collector's OTTL statements.",
    )
    to: str = Field(max_length=255, pattern=VOCABULARY_NAME, description="The vocabulary name.")
    from_unit: FromUnit | None = Field(
        default=None,
        description="What the source measures in when the target names the base unit: "
        "milli-, micro-, nanoseconds to seconds, mebibytes to bytes, percent to a ratio, "
        "millijoules to joules.",
    )


class MetricMappingSpec(KubeModel):
    """Renames added to the built-in ones on every cluster's collector."""

    metrics: Annotated[tuple[MetricRename, ...], Field(min_length=1, max_length=128)]


class MetricMappingStatus(OpenModel):
    """Written by the platform."""

    conditions: (
        Annotated[tuple[Condition, ...], Field(json_schema_extra=CONDITIONS_LIST)] | None
    ) = None


class MetricMapping(KubeModel):
    """Renames from a component's metrics to the vocabulary."""

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["MetricMapping"] = "MetricMapping"
    metadata: ObjectMeta
    spec: MetricMappingSpec
    status: MetricMappingStatus | None = None
