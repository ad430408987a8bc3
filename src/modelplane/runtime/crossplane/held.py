"""The held state: the answer of a function that cannot read one of its inputs.

A Fatal result makes Crossplane apply nothing and turn every condition the function
owns to Unknown, so one malformed input would erase the status a user relies on. When
the composite itself is valid, something can still be said: every observed composed
resource is re-emitted as it is (dropping one would delete it), the previous status and
conditions are carried over, and a Warning result names the bad input. Only a malformed
composite stays Fatal (dispatch).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from modelplane.api.meta import Condition, condition, holds
from modelplane.composition.types import ComposedObject, Json
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.messages import (
    FunctionRequest,
    FunctionResponse,
    Requirement,
    Result,
)
from modelplane.runtime.wire import conditions_of

# Conditions Crossplane itself writes on every composite: never a function's to carry.
CROSSPLANE_CONDITIONS = frozenset({"Ready", "Synced"})


def held_resources(
    observed: Mapping[str, Mapping[str, Any]],
    shape: Callable[[Json], Json],
    keep: Callable[[str], bool] = lambda key: True,
) -> list[ComposedObject]:
    """Every observed composed resource under a key ``keep`` accepts, re-emitted as desired.

    Read raw (integers restored by kind), since one of them may be the malformed input;
    ``shape`` reduces an observed object to the fields a desired object carries. One that
    is Ready is marked ready, so the composite's readiness does not drop meanwhile.
    """
    return [
        ComposedObject(key, shape(documents.restore(raw)), True if _ready(raw) else None)
        for key, raw in sorted(observed.items())
        if keep(key)
    ]


def _ready(raw: Mapping[str, Any]) -> bool:
    status = raw.get("status")
    return holds(
        conditions_of(status.get("conditions") if isinstance(status, Mapping) else None), "Ready"
    )


def previous_conditions(composite: Mapping[str, Any]) -> list[Condition]:
    """The composite's own conditions as the previous reconcile wrote them, read raw."""
    status = composite.get("status")
    raw = status.get("conditions") if isinstance(status, Mapping) else None
    carried: list[Condition] = []
    for item in raw if isinstance(raw, Sequence) and not isinstance(raw, str) else ():
        if not isinstance(item, Mapping) or item.get("type") in CROSSPLANE_CONDITIONS:
            continue
        type_, state = item.get("type"), item.get("status")
        if isinstance(type_, str) and state in ("True", "False", "Unknown"):
            reason, message = item.get("reason"), item.get("message")
            carried.append(
                condition(
                    type_,
                    state,
                    reason if isinstance(reason, str) else "",
                    message if isinstance(message, str) else "",
                )
            )
    return carried


def previous_status(composite: Mapping[str, Any]) -> Json | None:
    """The composite's status fields other than conditions (Crossplane owns those), if any."""
    status = documents.restore(composite).get("status")
    if not isinstance(status, dict):
        return None
    return {k: v for k, v in status.items() if k != "conditions"}


def held_response(
    request: FunctionRequest,
    problem: str,
    requirements: Sequence[Requirement],
    shape: Callable[[Json], Json],
) -> FunctionResponse:
    """The held state of a valid composite with a malformed input ``problem``.

    The composite's previous status and conditions come back unchanged, every observed
    composed resource is kept, and one Warning says which input is bad and what is kept.
    """
    composite = request.composite or {}
    kept = held_resources(request.observed, shape)
    message = f"{problem}; keeping {len(kept)} existing composed resources"
    return FunctionResponse(
        resources=kept,
        composite_status=previous_status(composite),
        composite_ready=None,
        conditions=previous_conditions(composite),
        results=[Result("Warning", message)],
        requirements=list(requirements),
    )
