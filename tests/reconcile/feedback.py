"""Render feed-back as a user drives it: render, apply, let replicas load, repeat.

``World`` holds what the control plane would observe: the ModelReplicas and ModelEndpoints
the previous render asked for. Each ``step`` renders the fleet against them and applies the
result: a replica whose spec and labels are unchanged keeps its readiness, a new or changed
one is not Ready until it is told to load (``load``), as a model server restarts on a change.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from modelplane.api import InferenceCluster, InferenceGateway, ModelEndpoint, ModelService
from modelplane.reconcile.deployment import Fleet, reconcile_fleet
from modelplane.runtime.local.render import (
    RenderedDeployment,
    render,
    render_endpoints,
    render_fronts,
)
from modelplane.runtime.wire import composed, deployment_status_wire
from tests.builders import front_door_cluster, inference_gateway
from tests.reconcile.fleet import fleet

HASH = "modelplane.ai/template-hash"  # spelled here: a test must notice when it changes
DRAINING = "modelplane.ai/draining-since"
# What a routable endpoint composes: the AIServiceBackend a route names, the Backend behind it.
KINDS = ("AIServiceBackend", "Backend")

Load = bool | Collection[str] | Callable[[str], bool]


def _ready(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _workload(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec without ``clusterInfo``: the deployment's stamp of its cluster's facts, which
    restarts nothing by itself (a replica's objects change with it only where the cluster's
    facts do, as they did when the replica read its cluster)."""
    return {k: v for k, v in spec.items() if k != "clusterInfo"}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same running replica: spec and labels unchanged (annotations are bookkeeping)."""
    return bool(
        _workload(a["spec"]) == _workload(b["spec"])
        and a["metadata"].get("labels") == b["metadata"].get("labels")
    )


def _loads(load: Load, name: str) -> bool:
    if isinstance(load, bool):
        return load
    if callable(load):
        return load(name)
    return name in load


class World:
    """The observed replicas and endpoints of a fleet driven by render feed-back."""

    def __init__(
        self,
        deployments: list[dict[str, Any]],
        clusters: list[dict[str, Any]],
        now: datetime | None = None,
        *,
        compose: bool = True,
    ) -> None:
        self.compose = compose  # False: the deployment reconcile alone, no replica composition
        self.deployments = deployments
        self.clusters = clusters
        self.now = now
        self.replicas: list[dict[str, Any]] = []
        self.endpoints: list[dict[str, Any]] = []
        self.last: list[RenderedDeployment] = []

    def render(self) -> list[RenderedDeployment]:
        """One reconcile of the fleet against what is observed now (nothing applied)."""
        f = replace(
            fleet(self.deployments, self.clusters, self.replicas, self.endpoints), now=self.now
        )
        if self.compose:
            return render(f)
        out = []
        for result in reconcile_fleet(f):
            wire = result.deployment.to_wire()
            wire["status"] = deployment_status_wire(result.status)
            replicas = [composed(r).object for r in result.replicas]
            out.append(
                RenderedDeployment(
                    wire,
                    result,
                    replicas,
                    [],
                    [composed(e).object for e in result.endpoints],
                    [composed(u).object for u in result.usages],
                )
            )
        return out

    def step(self, load: Load = False) -> RenderedDeployment:
        """Render, apply, then let the replicas ``load`` names (or all/none) become Ready.

        Returns the (first) deployment's rendered result of this reconcile.
        """
        self.last = self.render()
        before = {r["metadata"]["name"]: r for r in self.replicas}
        applied: list[dict[str, Any]] = []
        for r in self.last:
            for desired in r.replicas:
                obj = copy.deepcopy(desired)
                name = obj["metadata"]["name"]
                previous = before.get(name)
                ready = _loads(load, name) or (
                    previous is not None and _same(previous, obj) and _ready(previous)
                )
                obj["status"] = {
                    "conditions": [
                        {"type": "Ready", "status": "True" if ready else "False", "reason": "x"}
                    ]
                }
                applied.append(obj)
        self.replicas = applied
        self.endpoints = [
            {**copy.deepcopy(e), "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
            for r in self.last
            for e in r.endpoints
        ]
        return self.last[0]

    def settle(self, steps: int = 12) -> RenderedDeployment:
        """Step with every replica loading until nothing changes (at most ``steps`` times)."""
        out = self.step(True)
        for _ in range(steps):
            names = self.names()
            out = self.step(True)
            if self.names() == names and not _changing(out):
                break
        return out

    def names(self) -> list[str]:
        """The observed replica names, sorted."""
        return sorted(r["metadata"]["name"] for r in self.replicas)

    def ready(self) -> list[str]:
        """The observed Ready replica names, sorted."""
        return sorted(r["metadata"]["name"] for r in self.replicas if _ready(r))

    def routed(self) -> list[str]:
        """The names of the observed endpoints a route may pick (not draining), sorted."""
        return sorted(
            e["metadata"]["name"]
            for e in self.endpoints
            if DRAINING not in (e["metadata"].get("annotations") or {})
        )

    def draining(self) -> list[str]:
        """The names of the observed endpoints withdrawn and draining, sorted."""
        return sorted(
            e["metadata"]["name"]
            for e in self.endpoints
            if DRAINING in (e["metadata"].get("annotations") or {})
        )

    def _delivered(self, services: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Reconcile ``services`` against the observed endpoints (on the InferenceGateway
        default, its cluster published): what their Objects deliver to the gateway's cluster."""
        endpoints = [ModelEndpoint.model_validate(e) for e in self.endpoints]
        fleet_now = Fleet(deployments=(), clusters=(), endpoints=endpoints)
        gateway = InferenceGateway.model_validate(inference_gateway(address="198.51.100.20"))
        fronts = render_fronts(
            [gateway],
            [ModelService.model_validate(s) for s in services],
            render_endpoints(fleet_now, []),
            [InferenceCluster.model_validate(front_door_cluster())],
        )
        return [
            o["spec"]["forProvider"]["manifest"]
            for f in fronts
            for o in f.control_plane()[1:]
            if o["kind"] == "Object"
        ]

    def compose_backends(self, services: Sequence[dict[str, Any]]) -> set[str]:
        """The backends ``services`` compose: the names under which both the AIServiceBackend
        a route names and the Backend it points at exist."""
        objects = self._delivered(services)
        named = {
            kind: {o["metadata"]["name"] for o in objects if o["kind"] == kind} for kind in KINDS
        }
        return named["AIServiceBackend"] & named["Backend"]

    def compose_routes(self, services: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
        """Each AIGatewayRoute ``services`` compose: its name to the AIServiceBackends its
        backendRefs name."""
        return {
            name: [ref["name"] for ref in refs]
            for name, refs in self.compose_route_refs(services).items()
        }

    def compose_route_refs(
        self, services: Sequence[dict[str, Any]]
    ) -> dict[str, list[dict[str, Any]]]:
        """As ``compose_routes``, each route's backendRefs whole (weight, priority)."""
        return {
            o["metadata"]["name"]: [
                ref for rule in o["spec"]["rules"] for ref in rule["backendRefs"]
            ]
            for o in self._delivered(services)
            if o["kind"] == "AIGatewayRoute"
        }

    def clusters_of(self) -> dict[str, str]:
        """Replica name to cluster."""
        return {r["metadata"]["name"]: r["spec"]["clusterName"] for r in self.replicas}

    def revisions(self) -> dict[str, str]:
        """Replica name to its template hash label."""
        return {r["metadata"]["name"]: r["metadata"]["labels"].get(HASH, "") for r in self.replicas}


def _changing(r: RenderedDeployment) -> bool:
    progressing = condition(r, "Progressing")
    return progressing is None or progressing["reason"] != "RolloutComplete"


def condition(r: RenderedDeployment, kind: str) -> dict[str, Any] | None:
    """The deployment's condition of type ``kind`` as rendered."""
    conditions: Sequence[dict[str, Any]] = r.deployment["status"]["conditions"]
    return next((c for c in conditions if c["type"] == kind), None)


def said(r: RenderedDeployment, kind: str) -> tuple[str, str, str]:
    """(status, reason, message) of the deployment's condition ``kind``."""
    c = condition(r, kind)
    assert c is not None, f"no {kind} condition"
    return c["status"], c.get("reason", ""), c.get("message", "")
