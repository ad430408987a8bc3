"""Quantity parsing and arithmetic: exact rational reference and hypothesis properties."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.cel import QuantityError, is_quantity, parse_quantity

BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
NANO = Fraction(1, 10**9)
MAX = 2**63 - 1


def reference(sign: str, whole: str, frac: str, suffix: str) -> Fraction:
    """The Quantity value, computed independently of the implementation."""
    number = Fraction(int(whole + frac or "0"), 10 ** len(frac))
    if suffix in BINARY:
        value = number * 2 ** BINARY[suffix]
    elif suffix in DECIMAL:
        value = number * Fraction(10) ** DECIMAL[suffix]
    else:
        value = number * Fraction(10) ** int(suffix[1:])
    if value:
        value = math.ceil(value / NANO) * NANO
    if suffix in BINARY and value > MAX:
        value = Fraction(MAX)
    return -value if sign == "-" else value


digits = st.text("0123456789", min_size=1, max_size=20)
suffixes = st.one_of(
    st.sampled_from(sorted(BINARY) + sorted(DECIMAL)),
    st.builds(lambda e, s: f"e{s}{e}", st.integers(0, 30), st.sampled_from(["", "+", "-"])),
)


@st.composite
def quantities(draw: st.DrawFn) -> tuple[str, Fraction]:
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(digits)
    frac = draw(st.one_of(st.none(), st.text("0123456789", max_size=12)))
    suffix = draw(suffixes)
    text = sign + whole + ("" if frac is None else "." + frac) + suffix
    return text, reference(sign, whole, frac or "", suffix)


@given(quantities())
def test_round_trip_matches_exact_value(case: tuple[str, Fraction]) -> None:
    text, expected = case
    assert parse_quantity(text).value == expected


@given(quantities(), quantities())
def test_ordering_agrees_with_fractions(a: tuple[str, Fraction], b: tuple[str, Fraction]) -> None:
    qa, qb = parse_quantity(a[0]), parse_quantity(b[0])
    expected = (a[1] > b[1]) - (a[1] < b[1])
    assert qa.compare(qb) == expected
    assert (qa == qb) == (expected == 0)
    assert qa.add(qb).value == a[1] + b[1]
    assert qa.sub(qb).value == a[1] - b[1]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("+", 0),
        (".", 0),
        ("-", 0),
        ("Mi", 0),
        ("k", 0),
        ("Ti", 0),
        ("0Pi", 0),
        ("n", 0),
        ("1E", 10**18),
        ("1e3", 1000),
        ("1E+3", 1000),
        ("1.5Ki", 1536),
        ("-0.0000000001", Fraction(-1, 10**9)),
        ("8Ei", MAX),
        ("-8Ei", -MAX),
        ("256E", 256 * 10**18),
        (".5", Fraction(1, 2)),
    ],
)
def test_values(text: str, value: Fraction | int) -> None:
    assert parse_quantity(text).value == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        "200K",
        "1,3G",
        "1e3Gi",
        "10Mo",
        "10Mm",
        "Three",
        " 5Gi",
        "5Gi ",
        "Pi",
        "Ei",
        "e-10",
        "1e",
        "1Ee5",
        "--1",
        "1.2.3",
    ],
)
def test_invalid(text: str) -> None:
    assert not is_quantity(text)
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_huge_exponent_is_cheap() -> None:
    huge = parse_quantity("1e999999999")
    assert huge.compare(parse_quantity("1E")) == 1
    assert not huge.is_integer()
    assert huge.as_approximate_float() == float("inf")
    assert parse_quantity("1e-999999999") == parse_quantity("1n")


def test_integer_conversions() -> None:
    assert parse_quantity("141Gi").as_integer() == 151397597184
    assert not parse_quantity("1.5").is_integer()
    with pytest.raises(QuantityError):
        parse_quantity("1.5").as_integer()
    assert parse_quantity("9223372036854775807").is_integer()
    assert not parse_quantity("9223372036854775808").is_integer()
