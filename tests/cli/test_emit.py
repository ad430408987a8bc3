"""render's JSON writer (cli/emit.py): always the standard library's text, byte for byte."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.cli import emit


def standard(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


# Strings over the characters writers treat apart: quotes, backslashes, controls, DEL,
# the line separators, non-ASCII, astral characters and lone surrogates.
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from('"\\/\x00\x01\x08\x0c\n\r\t\x1f\x7f\x80\u2028\u2029\ufeff\ud800\udfff'),
        st.characters(),
    ),
    max_size=12,
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e16, 1e15, 1e-5, 1e-4, 0.1, 5e-324, 1.7976931348623157e308]),
    TEXT,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(TEXT, inner, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=400)
@given(VALUES)
def test_the_text_is_the_standard_librarys(value: Any) -> None:
    try:
        expected = standard(value)
    except (TypeError, ValueError) as error:
        with pytest.raises(type(error)):
            emit.indented_json(value)
        return
    assert emit.indented_json(value) == expected


# What orjson writes apart or refuses: each must take the standard library's path.
SLOW = [
    ("NaN", [math.nan]),
    ("infinity", {"a": math.inf}),
    ("small float", {"x": 1e-5}),
    ("small float in exponent form", [2.5e-7]),
    ("integer past 64 bits", [2**64]),
    ("integer key", {1: "a"}),
    ("lone surrogate", ["\ud800"]),
    ("lone surrogate key", {"\udfff": 1}),
    ("nesting past orjson's depth", json.loads("[" * 300 + "]" * 300)),
]


@pytest.mark.parametrize(("case", "value"), SLOW, ids=[c for c, _ in SLOW])
def test_where_the_writers_differ_the_standard_library_writes(case: str, value: Any) -> None:
    assert emit._fast(value) is None, case
    assert emit.indented_json(value) == standard(value)


# What render prints: names, labels, quoted CEL, non-ASCII, empty containers, tuples.
FAST = [
    ("objects", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]),
    ("empty containers", {"a": {}, "b": [], "c": [{}], "d": ""}),
    ("escapes", ['device.capacity["gpu.nvidia.com"]', "a\nb\tc\x01\x7f", "caf\u00e9 \U0001f600"]),
    ("numbers", [0, -1, 2**63 - 1, -(2**63), 0.5, 1.0, 1e15, 1e16, 1e-4, True, False, None]),
    ("tuples", {"t": (1, ("a", {}))}),
]


@pytest.mark.parametrize(("case", "value"), FAST, ids=[c for c, _ in FAST])
def test_what_render_prints_takes_the_fast_writer(case: str, value: Any) -> None:
    assert emit._fast(value) == standard(value), case


def test_a_value_neither_writer_takes_is_refused_as_before() -> None:
    with pytest.raises(TypeError):
        emit.indented_json({"a": object()})
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        emit.indented_json(loop)
