"""DRA device selectors: the ``device`` value, compilation, evaluation and memoisation."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.errors import ModelplaneError
from modelplane.memo import memoized

from .engine import (
    DEVICE_ATTRIBUTES,
    DEVICE_CAPACITY,
    DEVICE_DRIVER,
    CompileFailure,
    Program,
    compile_expression,
    encode,
    new_activation,
)
from .quantity import QuantityError, parse_quantity
from .semver import SemverError, parse_semver

__all__ = [
    "DeviceError",
    "DeviceProfile",
    "all_selectors_match",
    "check_selector",
    "device_value",
    "matching_device_indexes",
    "selector_matches",
]


class DeviceError(ModelplaneError, ValueError):
    """A device's attributes or capacity cannot be turned into a selector value."""


@dataclass(frozen=True, slots=True)
class DeviceProfile:
    """What a selector can see of one device, identified by its canonical JSON.

    Two devices with the same driver, attributes and capacity share one
    profile, so a selector's result is computed once for all of them.
    """

    key: str

    @staticmethod
    def of(
        driver: str,
        attributes: Mapping[str, Mapping[str, object]],
        capacity: Mapping[str, Mapping[str, object]],
    ) -> DeviceProfile:
        """The profile of a device in the raw API shape of InferenceClass devices."""
        doc = {
            "driver": driver or "",
            "attributes": {k: dict(v) for k, v in (attributes or {}).items()},
            "capacity": {k: dict(v) for k, v in (capacity or {}).items()},
        }
        return DeviceProfile(json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str))


# ---------------------------------------------------------------- device value


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _attribute(entry: Mapping[str, Any]) -> Any:
    if "version" in entry:
        version = entry["version"]
        if not isinstance(version, str):
            raise DeviceError("version attribute is not a string")
        try:
            return encode(parse_semver(version))
        except SemverError as err:
            raise DeviceError(f"invalid version {version!r}: {err}") from None
    if "string" in entry and isinstance(entry["string"], str):
        return entry["string"]
    if "bool" in entry and isinstance(entry["bool"], bool):
        return entry["bool"]
    if "int" in entry and isinstance(entry["int"], int) and not isinstance(entry["int"], bool):
        return entry["int"]
    raise DeviceError("attribute has no string, version, bool or int value")


def _capacity(entry: Mapping[str, Any]) -> bytes | None:
    if "value" not in entry:
        return None
    value = entry["value"]
    if not isinstance(value, str):
        raise DeviceError("capacity value is not a string")
    try:
        return encode(parse_quantity(value))
    except QuantityError as err:
        raise DeviceError(f"invalid capacity {value!r}: {err}") from None


def device_value(profile: DeviceProfile) -> dict[str, Any]:
    """The engine variables for one device (docs/scheduling.md, "Device selectors"); DeviceError if
    broken.
    """
    doc = json.loads(profile.key)
    driver: str = doc["driver"]
    attributes: dict[str, dict[str, Any]] = {}
    # Lexicographic order makes "later wins" deterministic for colliding names.
    for name in sorted(doc["attributes"]):
        domain, ident = _split(name, driver)
        attributes.setdefault(domain, {})[ident] = _attribute(doc["attributes"][name])
    capacity: dict[str, dict[str, Any]] = {}
    for name in sorted(doc["capacity"]):
        value = _capacity(doc["capacity"][name])
        if value is not None:
            domain, ident = _split(name, driver)
            capacity.setdefault(domain, {})[ident] = value
    return {DEVICE_DRIVER: driver, DEVICE_ATTRIBUTES: attributes, DEVICE_CAPACITY: capacity}


# ---------------------------------------------------------------- caches

# Bounds: a fleet's distinct selectors and device profiles number in the tens to hundreds;
# results are one per (selector, profile) pair. All three are memos of ``modelplane.memo``.


@memoized("cel.selector.programs", 4096)
def _program(expr: str) -> Program | CompileFailure:
    try:
        return compile_expression(expr, "selector")
    except CompileFailure as failure:
        return failure


# An activation works only on the thread that built it: the engine finds the arena of a
# call into our functions (quantity(), compareTo(), ...) in a thread-local map
# (cel-expr/cel-python py_cel/py_cel_arena.cc, GetArenaMap; the installed 0.1.3 does
# this), so on another thread every such call fails and the selector reads false. The
# gRPC server evaluates on several threads, so activations are remembered per thread:
# keyed by a token object of the thread (never its ident, which a new thread may reuse).
_THREAD = threading.local()


def _thread_token() -> object:
    token: object | None = getattr(_THREAD, "token", None)
    if token is None:
        token = _THREAD.token = object()
    return token


def _activation(profile_key: str) -> Any:
    """The device's prebuilt activation for this thread, or None on a device error."""
    return _thread_activation(_thread_token(), profile_key)


@memoized("cel.selector.activations", 4096)
def _thread_activation(thread: object, profile_key: str) -> Any:
    try:
        return new_activation("selector", device_value(DeviceProfile(profile_key)))
    except DeviceError:
        return None


# ---------------------------------------------------------------- public API


def check_selector(expr: str) -> str | None:
    """None when ``expr`` compiles as a DRA selector, else the error detail."""
    program = _program(expr)
    return program.detail if isinstance(program, CompileFailure) else None


def _evaluate(expr: str, profile: DeviceProfile) -> bool:
    program = _program(expr)
    if isinstance(program, CompileFailure):
        return False
    activation = _activation(profile.key)
    if activation is None:
        return False
    return program.run(activation)


def selector_matches(expr: str, profile: DeviceProfile) -> bool:
    """True iff the selector yields boolean true on the device (memoised; never raises)."""
    return _result(expr, profile.key)


@memoized("cel.selector.results", 1 << 16)
def _result(expr: str, profile_key: str) -> bool:
    try:
        return _evaluate(expr, DeviceProfile(profile_key))
    except Exception:  # a selector never fails the caller
        return False


def all_selectors_match(exprs: Sequence[str], profile: DeviceProfile) -> bool:
    """True iff every selector matches the device (the selectors of one request are ANDed)."""
    return all(selector_matches(e, profile) for e in exprs)


def matching_device_indexes(exprs: Sequence[str], profiles: Sequence[DeviceProfile]) -> list[int]:
    """Indexes of the devices of a pool on which all selectors are true."""
    return [i for i, p in enumerate(profiles) if all_selectors_match(exprs, p)]
