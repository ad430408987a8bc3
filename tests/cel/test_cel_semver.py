"""Semver parsing and precedence."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.cel import Semver, SemverError, is_semver, parse_semver

numeric = st.integers(0, 30).map(str)
alnum = st.text("abcXYZ-0123", min_size=1, max_size=4).filter(
    lambda s: not s.isdigit() or s == "0" or not s.startswith("0")
)
prerelease = st.lists(st.one_of(numeric, alnum), max_size=3)
build = st.lists(st.text("ab01-", min_size=1, max_size=3), max_size=2)


@st.composite
def versions(draw: st.DrawFn) -> Semver:
    core = ".".join(str(draw(st.integers(0, 3))) for _ in range(3))
    pre = draw(prerelease)
    meta = draw(build)
    text = core + ("-" + ".".join(pre) if pre else "") + ("+" + ".".join(meta) if meta else "")
    return parse_semver(text)


@given(versions(), versions())
def test_compare_is_antisymmetric_and_consistent_with_equality(a: Semver, b: Semver) -> None:
    assert a.compare(b) == -b.compare(a)
    assert (a.compare(b) == 0) == (a == b)
    if a == b:
        assert hash(a) == hash(b)


@given(versions(), versions(), versions())
def test_compare_is_transitive(a: Semver, b: Semver, c: Semver) -> None:
    ordered = sorted([a, b, c], key=functools.cmp_to_key(lambda x, y: x.compare(y)))
    assert ordered[0].compare(ordered[1]) <= 0
    assert ordered[1].compare(ordered[2]) <= 0
    assert ordered[0].compare(ordered[2]) <= 0


@pytest.mark.parametrize(
    "text",
    [
        "1.0.0-01",
        "1.0.0-",
        "1.0.0+",
        "1.0.0-a..b",
        "1.0.0+a_b",
        "18446744073709551616.0.0",
        "1.0.0-é",
    ],
)
def test_strict_invalid(text: str) -> None:
    assert not is_semver(text)
    with pytest.raises(SemverError):
        parse_semver(text)


def test_limits_and_normalisation() -> None:
    assert parse_semver("18446744073709551615.0.0").major == 2**64 - 1
    assert parse_semver("v01.01", normalize=True) == parse_semver("1.1.0")
    assert parse_semver("1.2.3-rc.1+b", normalize=True).prerelease == ("rc", 1)
    assert not is_semver("1.0-rc", normalize=True)
    assert parse_semver("0.00.000", normalize=True) == parse_semver("0.0.0")
    assert parse_semver("1.0.0+a") == parse_semver("1.0.0+b")
