"""The compile-time iteration bound agrees with the engine's runtime budget.

cel-expr-python 0.1.3 stops an evaluation after 9,999 comprehension steps in all (measured
here, not documented by the binding); a selector that could pass that is refused at compile
time, so every selector that compiles evaluates to its true result on every device.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.cel import DeviceProfile, check_selector, clear_caches, device_value
from modelplane.cel.cost import ENGINE_MAX_ITERATIONS
from modelplane.cel.engine import _env, new_activation


@pytest.fixture(autouse=True)
def _fresh() -> None:
    clear_caches()


def _ones(n: int) -> str:
    return "[" + ",".join(["1"] * n) + "]"


# A device with 22 attribute domains (within the 32 attributes a device may publish).
WIDE = DeviceProfile.of(
    "gpu.nvidia.com", {f"d{i}.example.com/a": {"int": 1} for i in range(22)}, {}
)


def _engine(expr: str, profile: DeviceProfile = WIDE) -> Any:
    """The raw engine's result, or the text of its runtime error."""
    program = _env("selector").runtime.compile(expr)
    try:
        return program.eval(new_activation("selector", device_value(profile))).value()
    except Exception as err:
        return str(err)


def _refusal(steps: int) -> str:
    return (
        f"expression may take {steps} comprehension steps, more than the engine's limit of "
        f"{ENGINE_MAX_ITERATIONS}"
    )


@pytest.mark.parametrize(
    ("expr", "steps"),
    [
        (f"{_ones(9999)}.all(x, true)", None),
        (f"{_ones(10000)}.all(x, true)", 10000),
        (f"{_ones(99)}.all(x, {_ones(100)}.all(y, true))", None),  # 99 + 99 x 100
        (f"{_ones(100)}.all(x, {_ones(99)}.all(y, true))", 10000),  # 100 + 100 x 99
        (f"{_ones(4999)}.map(x, x).all(y, true)", None),
        (f"{_ones(5000)}.map(x, x).all(y, true)", 10000),
        (f"({_ones(5000)} + {_ones(5000)}).exists(y, false)", 10000),
        (f"[{_ones(5000)}, {_ones(5000)}].all(l, l.all(x, true))", 10002),
        # Three nested walks over a device's attribute domains: up to 32^3 on some device.
        (
            "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, true)))",
            33824,
        ),
    ],
)
def test_the_bound_is_the_engines_budget(expr: str, steps: int | None) -> None:
    # Without the bound every one of these would compile, and the refused ones would read as "no
    # match".
    if steps is None:
        assert check_selector(expr) is None
        assert _engine(expr) is True
    else:
        assert check_selector(expr) == _refusal(steps)
        assert "Iteration budget exceeded" in _engine(expr)


_size = st.integers(0, 140)


@st.composite
def _selectors(draw: st.DrawFn) -> str:
    """Nested literal ranges, device walks, map(), filter() and concatenation."""
    depth = draw(st.integers(1, 3))
    body = "true"
    for level in range(depth):
        var = f"v{level}"
        kind = draw(st.sampled_from(["list", "device", "map", "filter", "concat"]))
        n = draw(_size)
        source = {
            "list": _ones(n),
            "device": "device.attributes",
            "map": f"{_ones(n)}.map(m{level}, m{level} + 1)",
            "filter": f"{_ones(n)}.filter(f{level}, f{level} > 0)",
            "concat": f"({_ones(n)} + {_ones(draw(_size))})",
        }[kind]
        body = f"{source}.all({var}, {body})"
    return body


@settings(max_examples=150, deadline=None)
@given(_selectors())
def test_a_selector_that_compiles_evaluates_to_its_true_result(expr: str) -> None:
    # Every drawn selector is true on every device; compiled, the engine must say so.
    if check_selector(expr) is None:
        assert _engine(expr) is True
