"""cel-python (celpy) as a differential oracle: the same libraries, written against celpy.

celpy does not type-check, so only evaluation rows are compared. The device
value is built by the production code (``device_value``) and converted, so the
oracle checks the engine's evaluation, not the device construction.
"""

from __future__ import annotations

from typing import Any

import celpy
from celpy import celtypes

from modelplane.cel import DeviceError, DeviceProfile, device_value, is_quantity, is_semver
from modelplane.cel.engine import decode
from modelplane.cel.quantity import Quantity, parse_quantity
from modelplane.cel.semver import Semver, parse_semver


class _Opaque:
    """A Quantity or Semver inside celpy; == compares by value (Semver: precedence)."""

    def __init__(self, value: Quantity | Semver) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Opaque) or type(other.value) is not type(self.value):
            raise TypeError("no such overload")
        return bool(self.value == other.value)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]


def _q(x: Any) -> Quantity:
    if not isinstance(x, _Opaque) or not isinstance(x.value, Quantity):
        raise TypeError("expected Quantity")
    return x.value


def _cmp(a: Any, b: Any) -> int:
    if (
        not isinstance(a, _Opaque)
        or not isinstance(b, _Opaque)
        or type(a.value) is not type(b.value)
    ):
        raise TypeError("no such overload")
    return int(a.value.compare(b.value))  # type: ignore[arg-type]


def _num(x: Any) -> Quantity | int:
    return _q(x) if isinstance(x, _Opaque) else int(x)


FUNCTIONS: dict[str, Any] = {
    "quantity": lambda s: _Opaque(parse_quantity(str(s))),
    "isQuantity": lambda s: celtypes.BoolType(is_quantity(str(s))),
    "sign": lambda q: celtypes.IntType(_q(q).sign()),
    "isInteger": lambda q: celtypes.BoolType(_q(q).is_integer()),
    "asInteger": lambda q: celtypes.IntType(_q(q).as_integer()),
    "asApproximateFloat": lambda q: celtypes.DoubleType(_q(q).as_approximate_float()),
    "add": lambda a, b: _Opaque(_q(a).add(_num(b))),
    "sub": lambda a, b: _Opaque(_q(a).sub(_num(b))),
    "compareTo": lambda a, b: celtypes.IntType(_cmp(a, b)),
    "isGreaterThan": lambda a, b: celtypes.BoolType(_cmp(a, b) == 1),
    "isLessThan": lambda a, b: celtypes.BoolType(_cmp(a, b) == -1),
    "semver": lambda s, n=False: _Opaque(parse_semver(str(s), bool(n))),
    "isSemver": lambda s, n=False: celtypes.BoolType(is_semver(str(s), bool(n))),
    "major": lambda v: celtypes.IntType(v.value.major),
    "minor": lambda v: celtypes.IntType(v.value.minor),
    "patch": lambda v: celtypes.IntType(v.value.patch),
}


class _DomainMap(celtypes.MapType):
    """An unknown domain reads as an empty map; membership sees only real domains."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType({})


def _convert(value: Any) -> Any:
    if isinstance(value, bytes):
        return _Opaque(decode(value))
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, dict):
        return celtypes.MapType({celtypes.StringType(k): _convert(v) for k, v in value.items()})
    raise TypeError(type(value))


def oracle_matches(expr: str, profile: DeviceProfile) -> bool:
    """The selector's result computed by celpy."""
    try:
        value = device_value(profile)
    except DeviceError:
        return False
    device = celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(value["device.driver"]),
            celtypes.StringType("attributes"): _DomainMap(_convert(value["device.attributes"])),
            celtypes.StringType("capacity"): _DomainMap(_convert(value["device.capacity"])),
        }
    )
    env = celpy.Environment()
    try:
        program = env.program(env.compile(expr), functions=FUNCTIONS)
        result = program.evaluate({"device": device})
    except Exception:
        return False
    return isinstance(result, celtypes.BoolType) and bool(result)
