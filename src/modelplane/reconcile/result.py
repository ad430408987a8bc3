"""What a reconcile of one object returns: composed objects, status, conditions, events.

The endpoint, gateway and service reconciles share this shape (and
``runtime.crossplane.messages.response_of`` reads it); each names its own status type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from modelplane.api.meta import Condition
from modelplane.composition.types import ComposedObject
from modelplane.events import Event

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class ReconcileResult(Generic[S]):
    """The objects to compose, the status to publish, its conditions and events."""

    objects: list[ComposedObject]
    status: S
    conditions: list[Condition]
    events: list[Event] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        """Every condition of the object holds (status "True")."""
        return all(c.status == "True" for c in self.conditions)
