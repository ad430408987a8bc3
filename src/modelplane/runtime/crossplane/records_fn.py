"""InferenceClass: a record, marked ready (docs/crossplane.md, "How the function behaves").

The function composes nothing and sets no condition for them; it validates the
composite (a malformed one is a Fatal result like any other) and marks it ready.
ModelCache has its own function (``cache_fn``), ModelEndpoint too
(``endpoint_fn``).
"""

from __future__ import annotations

from modelplane.api import InferenceClass, KubeModel
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.messages import FunctionRequest, FunctionResponse

RECORD_MODELS: dict[str, type[KubeModel]] = {
    "InferenceClass": InferenceClass,
}


def run_record(request: FunctionRequest, kind: str) -> FunctionResponse:
    """Validate the record and mark it ready."""
    documents.composite(request.composite, RECORD_MODELS[kind])
    return FunctionResponse(composite_ready=True)
