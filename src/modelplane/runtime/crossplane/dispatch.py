"""Dispatch on the observed composite's apiVersion and kind (docs/crossplane.md, "How the function
behaves").

One process serves every Composition: the function is chosen by the composite it is
called for. ``run`` never raises: a malformed input is a Fatal result naming the first
problem, and so is an unexpected error, because on a Fatal result Crossplane applies
nothing and nothing observed is deleted (README Decision 4).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from modelplane.api.base import GROUP_VERSION
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.cache_fn import run_cache
from modelplane.runtime.crossplane.cluster_fn import run_cluster
from modelplane.runtime.crossplane.deployment_fn import run_deployment
from modelplane.runtime.crossplane.endpoint_fn import run_endpoint
from modelplane.runtime.crossplane.messages import FunctionRequest, FunctionResponse, fatal
from modelplane.runtime.crossplane.records_fn import RECORD_MODELS, run_record
from modelplane.runtime.crossplane.replica_fn import run_replica
from modelplane.runtime.crossplane.service_fn import run_gateway, run_service

Handler = Callable[[FunctionRequest], FunctionResponse]

_log = logging.getLogger("modelplane.function")


def _record(kind: str) -> Handler:
    return lambda request: run_record(request, kind)


HANDLERS: dict[str, Handler] = {
    "ModelDeployment": run_deployment,
    "ModelReplica": run_replica,
    "InferenceCluster": run_cluster,
    "ModelCache": run_cache,
    "ModelEndpoint": run_endpoint,
    "ModelService": run_service,
    "InferenceGateway": run_gateway,
    **{kind: _record(kind) for kind in RECORD_MODELS},
}


def handler_for(api_version: str, kind: str) -> Handler | None:
    """The function serving composites of this apiVersion and kind, if any."""
    if api_version != GROUP_VERSION:
        return None
    return HANDLERS.get(kind)


def run(request: FunctionRequest) -> FunctionResponse:
    """Answer one request; never raises."""
    api_version, kind = documents.identity(request.composite)
    handler = handler_for(api_version, kind)
    if handler is None:
        return fatal(f"unsupported composite resource {api_version}/{kind}")
    try:
        return handler(request)
    except documents.Refused as refused:
        return fatal(str(refused))
    except RecursionError:
        return fatal(f"invalid {kind}: input nested too deeply")
    except Exception as error:  # noqa: BLE001 - a bug must not delete what is running
        _log.exception("function failed", extra={"fields": {"kind": kind}})
        return fatal(f"internal error in the {kind} function: {type(error).__name__}: {error}")
