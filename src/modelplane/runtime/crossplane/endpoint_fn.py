"""The ModelEndpoint function: compose the endpoint's routable backend.

The reconcile is ``modelplane.reconcile.endpoint.reconcile_endpoint``, the same code
``render`` runs; this module reads which backend resources are observed and writes the
response. It needs no required resources: the URL is all it reads.
"""

from __future__ import annotations

from modelplane.api import ModelEndpoint
from modelplane.reconcile.endpoint import reconcile_endpoint
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.messages import FunctionRequest, FunctionResponse, response_of


def run_endpoint(request: FunctionRequest) -> FunctionResponse:
    """The endpoint function: the Service and EndpointSlice, RoutingReady, the status."""
    endpoint = documents.composite(request.composite, ModelEndpoint)
    result = reconcile_endpoint(endpoint, request.observed.keys())
    return response_of(result)
