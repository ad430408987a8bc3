"""Plain-data views of a RunFunctionRequest and RunFunctionResponse.

The functions of this package read and write these instead of protobuf messages, so
they stay pure and are tested with ordinary dicts. ``proto`` converts between the two.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from modelplane.api.base import GROUP_VERSION
from modelplane.api.meta import Condition
from modelplane.composition.types import ComposedObject
from modelplane.events import Event
from modelplane.runtime.crossplane.freshness import State

Severity = Literal["Fatal", "Warning", "Normal"]


@dataclass(frozen=True)
class FunctionRequest:
    """What Crossplane sent, as plain data.

    ``required`` maps a requirement key to the items Crossplane fetched for it. A key
    that is absent was *not fetched yet*; a key mapped to an empty list was *fetched,
    none* (docs/crossplane.md, "How the function behaves").
    """

    composite: Mapping[str, Any] | None
    observed: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    required: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    # Requirement keys the Composition's step fetches before every call (its input says
    # which): the function does not declare them (docs/crossplane.md, "One call per
    # reconcile").
    prefetched: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Requirement:
    """One resource requirement: a ``ResourceSelector`` under ``key``.

    Without ``match_name`` the selector matches by ``match_labels`` (sorted (key, value)
    pairs; none: every object of the kind), across every namespace when ``namespace`` is
    None (Crossplane v2.3 ``internal/xfn/required_resources.go``, docs/crossplane.md).
    """

    key: str
    kind: str
    match_name: str | None = None
    namespace: str | None = None
    api_version: str = GROUP_VERSION
    match_labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Result:
    """A function result: Fatal stops the pipeline; Warning and Normal become events."""

    severity: Severity
    message: str


@dataclass
class FunctionResponse:
    """What the function answers, before it is put on the wire.

    ``composite_status`` None leaves the composite's status untouched; ``composite_ready``
    None leaves readiness to Crossplane. A response carrying a Fatal result is sent
    with the request's desired state unchanged, so Crossplane applies nothing.
    """

    resources: list[ComposedObject] = field(default_factory=list)
    composite_status: dict[str, Any] | None = None
    composite_ready: bool | None = None
    # Crossplane owns status.conditions and adds lastTransitionTime.
    conditions: list[Condition] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    requirements: list[Requirement] = field(default_factory=list)
    # False when the answer depends on the time as well as the request (a rollout's progress
    # deadline): the server then never answers the same request from memory.
    timeless: bool = True
    # What the function found, for the answer's TTL (``freshness.READS``).
    state: State = State.DEFAULT

    @property
    def fatal(self) -> bool:
        """True when the response carries a Fatal result."""
        return any(r.severity == "Fatal" for r in self.results)


def fatal(message: str, requirements: Sequence[Requirement] = ()) -> FunctionResponse:
    """A response that only reports a Fatal result (and keeps declaring ``requirements``)."""
    return FunctionResponse(results=[Result("Fatal", message)], requirements=list(requirements))


class _WireStatus(Protocol):
    def to_wire(self) -> dict[str, Any]: ...


class Reconciled(Protocol):
    """A core reconcile's result: composed objects, a typed status, conditions, events."""

    @property
    def objects(self) -> Sequence[ComposedObject]: ...
    @property
    def status(self) -> _WireStatus: ...
    @property
    def conditions(self) -> Sequence[Condition]: ...
    @property
    def events(self) -> Sequence[Event]: ...
    @property
    def ready(self) -> bool: ...


def response_of(result: Reconciled, requirements: Sequence[Requirement] = ()) -> FunctionResponse:
    """The response for a reconcile result: its objects, status, readiness and events."""
    return FunctionResponse(
        resources=list(result.objects),
        composite_status=result.status.to_wire(),
        composite_ready=result.ready,
        conditions=list(result.conditions),
        results=[Result(e.severity, e.message) for e in result.events],
        requirements=list(requirements),
    )
