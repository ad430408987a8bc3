"""Dispatch on the observed composite's apiVersion and kind (docs/crossplane.md, "How the function
behaves").

One process serves every Composition: the function is chosen by the composite it is
called for. ``run`` never raises: a malformed input is a Fatal result naming the first
problem, and so is an unexpected error, because on a Fatal result Crossplane applies
nothing and nothing observed is deleted (README Decision 4).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Mapping
from dataclasses import replace
from typing import Any

from modelplane.api import InferenceGateway, ModelDeployment, ModelReplica, ModelService
from modelplane.api.base import GROUP_VERSION
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.cache_fn import cache_of, run_cache
from modelplane.runtime.crossplane.cluster_fn import cluster_of, run_cluster
from modelplane.runtime.crossplane.deployment_fn import run_deployment
from modelplane.runtime.crossplane.endpoint_fn import run_endpoint
from modelplane.runtime.crossplane.messages import (
    FunctionRequest,
    FunctionResponse,
    Requirement,
    fatal,
)
from modelplane.runtime.crossplane.records_fn import RECORD_MODELS, run_record
from modelplane.runtime.crossplane.replica_fn import run_replica
from modelplane.runtime.crossplane.requirements import (
    cache_requirements,
    cluster_requirements,
    deployment_requirements,
    destination_requirements,
    gateway_requirements,
    replica_requirements,
    service_requirements,
)
from modelplane.runtime.crossplane.service_fn import run_gateway, run_service
from modelplane.runtime.crossplane.telemetry_fn import run_destination, run_mapping

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
    "TelemetryDestination": run_destination,
    "MetricMapping": run_mapping,
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


Wanted = Callable[[Mapping[str, Any]], list[Requirement]]

# What each kind requires, from its composite alone: the gRPC shell asks for it before
# composing anything (``run_call``). Kinds absent here require nothing.
REQUIREMENTS: dict[str, Wanted] = {
    "ModelDeployment": lambda c: deployment_requirements(documents.composite(c, ModelDeployment)),
    "ModelReplica": lambda c: replica_requirements(documents.composite(c, ModelReplica)),
    "InferenceCluster": lambda c: cluster_requirements(cluster_of(c)),
    "ModelCache": lambda c: cache_requirements(cache_of(c)),
    "TelemetryDestination": lambda c: destination_requirements(),
    "InferenceGateway": lambda c: gateway_requirements(documents.composite(c, InferenceGateway)),
    "ModelService": lambda c: service_requirements(
        documents.composite(c, ModelService).metadata.namespace or "default"
    ),
}


def declared(
    wanted: list[Requirement], prefetched: frozenset[str], present: Container[str]
) -> list[Requirement]:
    """The requirements an answer declares on the wire.

    One the Composition fetches before every call (``prefetched``, from the step's input)
    is left out, so a kind with nothing else to ask for settles in one call; unless it is
    not in the request after all (a Crossplane that did not fetch it): then it is asked for.
    """
    return [r for r in wanted if r.key not in prefetched or r.key not in present]


def run_call(request: FunctionRequest) -> FunctionResponse:
    """Answer one call of Crossplane's requirements loop; never raises.

    While something the function requires is not in the request yet, it answers with its
    requirements alone: Crossplane discards every answer but the one of the call where the
    requirements settle, so composing on this call would be wasted. Once everything is
    there it runs the function (``run``) and declares what it requires but the Composition
    does not fetch. ``render`` never comes here: it has no loop.
    """
    api_version, kind = documents.identity(request.composite)
    wanted_of = REQUIREMENTS.get(kind) if handler_for(api_version, kind) else None
    if wanted_of is None:
        return run(request)
    try:
        wanted = wanted_of(request.composite or {})
    except Exception:  # noqa: BLE001 - a malformed composite is the function's to report
        return run(request)
    requirements = declared(wanted, request.prefetched, request.required)
    if any(r.key not in request.required for r in wanted):
        return FunctionResponse(requirements=requirements)
    response = run(request)
    if response.fatal:
        return response
    return replace(response, requirements=requirements)
