"""The CRD-rule environment: ``self`` is dyn, with the quantity and semver libraries."""

from __future__ import annotations

import pytest

from modelplane.cel import CelError, compile_rule

LABELS = "!has(self.labels) || self.labels.all(k, !k.startsWith('modelplane.ai/'))"


@pytest.mark.parametrize(
    ("rule", "value", "expected"),
    [
        (LABELS, {}, True),
        (LABELS, {"labels": {"a": "b"}}, True),
        (LABELS, {"labels": {"modelplane.ai/x": "b"}}, False),
        ("type(self.port) == int ? self.port > 0 : self.port.size() > 0", {"port": 8080}, True),
        ("type(self.port) == int ? self.port > 0 : self.port.size() > 0", {"port": "http"}, True),
        ("type(self.port) == int ? self.port > 0 : self.port.size() > 0", {"port": 0}, False),
        ("self.x.y == 1", {}, False),
        ("self.x.y == 1", {"x": {"y": 1}}, True),
        ("self.x", {"x": 5}, False),
        ("isQuantity(self.value)", {"value": "141Gi"}, True),
        ("isQuantity(self.value)", {"value": "10Mo"}, False),
        ("isQuantity(self.value)", {"value": 5}, False),
        ("!has(self.version) || isSemver(self.version)", {"version": "9.0.0"}, True),
        ("!has(self.version) || isSemver(self.version)", {"version": "9.0"}, False),
        ("!has(self.version) || isSemver(self.version)", {"string": "x"}, True),
        (
            "[has(self.string), has(self.version), has(self.bool), has(self.int)]"
            ".filter(x, x).size() == 1",
            {"string": "a"},
            True,
        ),
        (
            "[has(self.string), has(self.version), has(self.bool), has(self.int)]"
            ".filter(x, x).size() == 1",
            {"string": "a", "int": 1},
            False,
        ),
        ("self.size() <= 63", "name", True),
        ("self == null", None, True),
        ("self.f > 1.5", {"f": 2.5}, True),
        ("self.items.exists(i, i.name == 'a')", {"items": [{"name": "a"}]}, True),
        ("quantity(self.q).isGreaterThan(quantity('1Gi'))", {"q": "2Gi"}, True),
        ("self.claim != 'DRA' || has(self.deviceClassName)", {"claim": "DRA"}, False),
    ],
)
def test_rule_evaluation(rule: str, value: object, expected: bool) -> None:
    assert compile_rule(rule).evaluate(value) is expected


def test_rule_compile_errors() -> None:
    with pytest.raises(CelError) as err:
        compile_rule("self.x ==")
    assert err.value.kind == "syntax"
    with pytest.raises(CelError, match="expression must evaluate to bool, got string"):
        compile_rule("'x'")
    with pytest.raises(CelError, match="undeclared reference to 'device"):
        compile_rule("device.driver == 'x'")


def test_unrepresentable_value_is_false() -> None:
    assert compile_rule("self == 1").evaluate(object()) is False
