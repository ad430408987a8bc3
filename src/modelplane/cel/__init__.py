"""CEL for Modelplane: DRA device selectors and CRD validation rules.

This package is the only place that uses the CEL engine (cel-expr-python).
It offers the Kubernetes DRA selector environment (scheduling.md §5) and the
environment CRD rules run in (``self`` plus the quantity and semver libraries).
"""

from __future__ import annotations

from .errors import CelError
from .quantity import Quantity, QuantityError, is_quantity, parse_quantity
from .rules import CompiledRule, clear_rule_cache, compile_rule
from .selectors import (
    DeviceError,
    DeviceProfile,
    all_selectors_match,
    check_selector,
    clear_selector_caches,
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
    """Forget every compiled program and memoised result (for cold measurements and tests)."""
    clear_selector_caches()
    clear_rule_cache()
