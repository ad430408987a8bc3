"""The ModelEndpoint function: check the endpoint's origin and publish its backend's name.

The reconcile is ``modelplane.reconcile.endpoint.reconcile_endpoint``, the same code
``render`` runs. It needs no required resources and composes nothing: the URL is all it reads.
"""

from __future__ import annotations

from modelplane.api import ModelEndpoint
from modelplane.reconcile.endpoint import reconcile_endpoint
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.messages import FunctionRequest, FunctionResponse, response_of


def run_endpoint(request: FunctionRequest) -> FunctionResponse:
    """The endpoint function: RoutingReady and the status."""
    endpoint = documents.composite(request.composite, ModelEndpoint)
    result = reconcile_endpoint(endpoint)
    return response_of(result)
