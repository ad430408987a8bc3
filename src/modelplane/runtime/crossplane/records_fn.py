"""InferenceClass, ModelCache and ModelEndpoint: records, marked ready (composition.md §14.1).

Weight staging and edge routing of endpoints are the platform's, not this project's, so
the function composes nothing and sets no condition; it validates the composite (a
malformed one is a Fatal result like any other) and marks it ready.
"""

from __future__ import annotations

from modelplane.api import InferenceClass, KubeModel, ModelCache, ModelEndpoint
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.messages import FunctionRequest, FunctionResponse

RECORD_MODELS: dict[str, type[KubeModel]] = {
    "InferenceClass": InferenceClass,
    "ModelCache": ModelCache,
    "ModelEndpoint": ModelEndpoint,
}


def run_record(request: FunctionRequest, kind: str) -> FunctionResponse:
    """Validate the record and mark it ready."""
    documents.composite(request.composite, RECORD_MODELS[kind])
    return FunctionResponse(composite_ready=True)
