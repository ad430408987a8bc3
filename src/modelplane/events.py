"""Events: the results a reconcile reports, which Crossplane records on the composite."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Event:
    """One event: its severity and its text.

    See docs/reconcile.md, "Conditions, events and readiness".
    """

    severity: Literal["Normal", "Warning"]
    message: str
