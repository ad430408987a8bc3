"""Kubernetes resource quantities, parsed exactly as ``resource.ParseQuantity``.

A :class:`Quantity` stores its value as ``mantissa * 10**exponent`` in lowest
terms (the mantissa has no trailing zero digit). Every parsed value is a
multiple of 10^-9 after rounding, so this form is exact; it also keeps a literal
such as ``1e999999999`` cheap, where a plain :class:`~fractions.Fraction` would
have to materialise a billion-digit integer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import total_ordering

from modelplane.errors import ModelplaneError

__all__ = ["Quantity", "QuantityError", "is_quantity", "parse_quantity"]

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_NUMBER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?")
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)\Z")
# Upstream fast path limits: a digit-less number only parses on the fast path.
_DIGITLESS_MAX_BINARY_EXP = 40
_MIN_SCALE = -9
# Aligning two exponents further apart than this would allocate an enormous
# integer; upstream would too, so such arithmetic is refused as a runtime error.
_MAX_ALIGN = 100_000


class QuantityError(ModelplaneError, ValueError):
    """A string is not a Kubernetes quantity, or arithmetic left the safe range."""


@total_ordering
@dataclass(frozen=True, slots=True, eq=False)
class Quantity:
    """An exact quantity ``mantissa * 10**exponent`` in canonical (lowest) form."""

    mantissa: int
    exponent: int

    @staticmethod
    def of(mantissa: int, exponent: int = 0) -> Quantity:
        """Build the canonical quantity for ``mantissa * 10**exponent``."""
        if mantissa == 0:
            return Quantity(0, 0)
        while mantissa % 10 == 0:
            mantissa //= 10
            exponent += 1
        return Quantity(mantissa, exponent)

    @property
    def value(self) -> Fraction:
        """The exact value as a Fraction (may be large for huge exponents)."""
        if self.exponent >= 0:
            return Fraction(self.mantissa * 10**self.exponent)
        return Fraction(self.mantissa, 10**-self.exponent)

    def sign(self) -> int:
        """-1, 0 or 1."""
        return (self.mantissa > 0) - (self.mantissa < 0)

    def _magnitude_order(self) -> int:
        # Position of the most significant digit; comparable across exponents.
        return len(str(abs(self.mantissa))) + self.exponent

    def compare(self, other: Quantity) -> int:
        """Exact three-way comparison: -1, 0 or 1."""
        s, o = self.sign(), other.sign()
        if s != o or s == 0:
            return (s > o) - (s < o)
        mag_s, mag_o = self._magnitude_order(), other._magnitude_order()
        if mag_s != mag_o:
            bigger = 1 if mag_s > mag_o else -1
            return bigger * s
        # Same leading-digit position: exponents differ by at most the digit count.
        e = min(self.exponent, other.exponent)
        a = self.mantissa * _pow10(self.exponent - e)
        b = other.mantissa * _pow10(other.exponent - e)
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.mantissa == other.mantissa and self.exponent == other.exponent

    def __hash__(self) -> int:
        return hash((self.mantissa, self.exponent))

    def __lt__(self, other: Quantity) -> bool:
        return self.compare(other) < 0

    def add(self, other: Quantity | int) -> Quantity:
        """Exact sum (no rounding, no saturation)."""
        if isinstance(other, int):
            other = Quantity.of(other)
        if self.mantissa == 0:
            return other
        if other.mantissa == 0:
            return self
        e = min(self.exponent, other.exponent)
        if max(self.exponent, other.exponent) - e > _MAX_ALIGN:
            raise QuantityError("quantity arithmetic out of range")
        a = self.mantissa * _pow10(self.exponent - e)
        b = other.mantissa * _pow10(other.exponent - e)
        return Quantity.of(a + b, e)

    def sub(self, other: Quantity | int) -> Quantity:
        """Exact difference (no rounding, no saturation)."""
        if isinstance(other, int):
            other = Quantity.of(other)
        return self.add(Quantity(-other.mantissa, other.exponent))

    def is_integer(self) -> bool:
        """True when the value is integral and fits in int64."""
        if self.exponent < 0:
            return False
        if self._magnitude_order() > 20:
            return False
        return INT64_MIN <= self.mantissa * _pow10(self.exponent) <= INT64_MAX

    def as_integer(self) -> int:
        """The value as an int64; QuantityError if not integral or out of range."""
        if not self.is_integer():
            raise QuantityError("cannot convert value to integer")
        return self.mantissa * _pow10(self.exponent)

    def as_approximate_float(self) -> float:
        """The nearest float64 (infinite when beyond the float range)."""
        if self._magnitude_order() > 400:
            return float("inf") if self.mantissa > 0 else float("-inf")
        if self._magnitude_order() < -400:
            return 0.0 if self.mantissa > 0 else -0.0
        return float(self.value)

    def __str__(self) -> str:
        return f"{self.mantissa}e{self.exponent}"


def _pow10(n: int) -> int:
    # int ** int is typed as Any (a negative exponent gives a float); n >= 0 here.
    result: int = 10**n
    return result


def _int32(n: int) -> int:
    # Upstream parses the exponent as int64 and then converts it to int32.
    return ((n + 2**31) % 2**32) - 2**31


def _suffix(suffix: str) -> tuple[int, int, bool] | None:
    """(base, exponent, is_binary) for a suffix, or None if invalid."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], False
    if suffix in _BINARY:
        return 2, _BINARY[suffix], True
    m = _EXPONENT.match(suffix)
    if m is None:
        return None
    exp = int(m.group(1))
    if not INT64_MIN <= exp <= INT64_MAX:
        return None
    return 10, _int32(exp), False


def _round_up_decimal(digits: int, scale: int) -> Quantity:
    """Quantity for ``digits * 10**scale`` rounded away from zero to 10^-9."""
    if scale >= _MIN_SCALE or digits == 0:
        return Quantity.of(digits, scale)
    shift = _MIN_SCALE - scale
    if shift > len(str(digits)):
        # Any non-zero magnitude below 10^-9 rounds up to exactly 1n.
        return Quantity.of(1, _MIN_SCALE)
    q, r = divmod(digits, 10**shift)
    return Quantity.of(q + (1 if r else 0), _MIN_SCALE)


def _binary_value(digits: int, frac_len: int, exp: int) -> Quantity:
    """Quantity for ``digits / 10**frac_len * 2**exp``, rounded up and saturated."""
    num = digits << exp
    den = 10**frac_len
    # Round up to a multiple of 10^-9.
    scaled, rem = divmod(num * 10**9, den)
    value = Quantity.of(scaled + (1 if rem else 0), _MIN_SCALE)
    if value.compare(Quantity.of(INT64_MAX)) > 0:
        return Quantity.of(INT64_MAX)
    return value


def parse_quantity(s: str) -> Quantity:
    """Parse a Kubernetes quantity string exactly as ``resource.ParseQuantity``.

    Raises QuantityError when the string is not a quantity.
    """
    if not s:
        raise QuantityError("quantities must match the regular expression")
    m = _NUMBER.match(s)
    assert m is not None  # every component is optional
    sign, whole, frac = m.group(1), m.group(2), m.group(3) or ""
    parsed = _suffix(s[m.end() :])
    if parsed is None:
        raise QuantityError(f"unable to parse quantity's suffix: {s!r}")
    base, exp, binary = parsed
    if not whole.strip("0") and not frac.strip("0"):
        # Digit-less numbers parse only on upstream's fast path.
        too_small = binary and exp > _DIGITLESS_MAX_BINARY_EXP or not binary and exp < _MIN_SCALE
        if not (whole or frac) and too_small:
            raise QuantityError(f"quantity has no digits: {s!r}")
        return Quantity(0, 0)
    digits = int(whole + frac)
    if base == 2:
        value = _binary_value(digits, len(frac), exp)
    else:
        value = _round_up_decimal(digits, exp - len(frac))
    return Quantity(-value.mantissa, value.exponent) if sign == "-" else value


def is_quantity(s: str) -> bool:
    """True iff :func:`parse_quantity` would succeed."""
    try:
        parse_quantity(s)
    except QuantityError:
        return False
    return True
