"""The TelemetryDestination and MetricMapping functions: adapters of ``reconcile.telemetry``."""

from __future__ import annotations

from modelplane.api import InferenceCluster, MetricMapping, TelemetryDestination
from modelplane.reconcile.telemetry import reconcile_destination, reconcile_mapping
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.messages import (
    FunctionRequest,
    FunctionResponse,
    fatal,
    response_of,
)
from modelplane.runtime.crossplane.requirements import CLUSTERS, destination_requirements


def run_destination(request: FunctionRequest) -> FunctionResponse:
    """The destination function: which clusters send, and their collectors' readiness."""
    destination = documents.composite(request.composite, TelemetryDestination)
    requirements = destination_requirements()
    try:
        clusters = documents.required(request.required, CLUSTERS, InferenceCluster)
    except documents.Refused as refused:
        return fatal(str(refused), requirements)
    if clusters is None:
        return FunctionResponse(composite_ready=False, requirements=requirements)
    return response_of(reconcile_destination(destination, clusters), requirements)


def run_mapping(request: FunctionRequest) -> FunctionResponse:
    """The mapping function: accepted."""
    return response_of(reconcile_mapping(documents.composite(request.composite, MetricMapping)))
