"""CEL for Modelplane: DRA device selectors and CRD validation rules.

This package is the only place that uses the CEL engine (cel-expr-python).
It offers the Kubernetes DRA selector environment (docs/scheduling.md, "Device selectors") and the
environment CRD rules run in (``self`` plus the quantity and semver libraries).
"""

from __future__ import annotations

from modelplane.memo import clear_all

from .errors import CelError
from .quantity import Quantity, QuantityError, is_quantity, parse_quantity
from .rules import CompiledRule, compile_rule
from .selectors import (
    DeviceError,
    DeviceProfile,
    all_selectors_match,
    check_selector,
    device_value,
    matching_device_indexes,
    selector_matches,
)
from .semver import Semver, SemverError, is_semver, parse_semver

__all__ = [
    "CelError",
    "CompiledRule",
    "DeviceError",
    "DeviceProfile",
    "Quantity",
    "QuantityError",
    "Semver",
    "SemverError",
    "all_selectors_match",
    "check_selector",
    "clear_caches",
    "compile_rule",
    "device_value",
    "is_quantity",
    "is_semver",
    "matching_device_indexes",
    "parse_quantity",
    "parse_semver",
    "selector_matches",
]


def clear_caches() -> None:
    """Forget every memo of the process, not only CEL's (for cold measurements and tests)."""
    clear_all()
