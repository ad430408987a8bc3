"""Compilation failure classes, cost, evaluation, device values and memoisation."""

from __future__ import annotations

import pytest
from cel_table import GPU, GPU_BAD_MEMORY, NIC, gpu_like

from modelplane.cel import (
    CelError,
    DeviceProfile,
    all_selectors_match,
    check_selector,
    clear_caches,
    compile_rule,
    device_value,
    matching_device_indexes,
    selector_matches,
)
from modelplane.cel.engine import CompileFailure, compile_expression, decode


@pytest.fixture(autouse=True)
def _fresh() -> None:
    clear_caches()


@pytest.mark.parametrize(
    ("expr", "kind", "fragment"),
    [
        ("not ) valid (", "syntax", "Syntax error"),
        ("device.count > 1", "check", "undeclared reference to 'device.count'"),
        ("device.name == 'x'", "check", "undeclared reference"),
        ('"abc".find("b")', "check", "undeclared reference to 'find'"),
        ('url("http://x")', "check", "undeclared reference to 'url'"),
        ('"a".lowerAscii() == "a"', "check", "undeclared reference"),
        ('quantity("1").sign() == 1', "check", "undeclared reference to 'sign'"),
        ('compareTo(quantity("1"), quantity("2")) == 0', "check", "compareTo"),
        ('quantity("1") < quantity("2")', "check", "no matching overload for '_<_'"),
        ('semver("1.0.0") >= semver("1.0.0")', "check", "no matching overload"),
        ('quantity("1").compareTo(semver("1.0.0")) == 0', "check", "no matching overload"),
        ('quantity("1") == 1', "check", "no matching overload for '_==_'"),
        ('quantity("1") == semver("1.0.0")', "check", "no matching overload"),
        ('isSemver("1", 1)', "check", "no matching overload"),
        ('"5"', "result", "expression must evaluate to bool, got string"),
        ("1 + 2", "result", "expression must evaluate to bool, got int"),
        ('quantity("1Gi")', "result", "expression must evaluate to bool, got Quantity"),
        ('semver("1.0.0")', "result", "expression must evaluate to bool, got Semver"),
        ("[true]", "result", "got list"),
        ("{}", "result", "got map"),
        ("null", "result", "got null_type"),
        ("1u", "result", "got uint"),
        ("1.0", "result", "got double"),
        ('b"x"', "result", "got bytes"),
    ],
)
def test_compile_failures(expr: str, kind: str, fragment: str) -> None:
    with pytest.raises(CompileFailure) as err:
        compile_expression(expr, "selector")
    assert err.value.kind == kind
    assert fragment in err.value.detail
    assert "\n" not in err.value.detail
    assert check_selector(expr) == err.value.detail


def test_dyn_result_compiles() -> None:
    assert check_selector('device.attributes["d"].x') is None


NEST3 = "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, true)))"
NEST4 = (
    "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
    "device.attributes.all(d, true))))"
)


def test_cost_limit() -> None:
    # Within the cost limit, but past the engine's iteration budget on a device with 32
    # attribute domains (32^3 steps): refused by the iteration bound
    # (tests/cel/test_cel_iterations.py).
    assert check_selector(NEST3) == (
        "expression may take 33824 comprehension steps, more than the engine's limit of 9999"
    )
    # 1 + 2 + 32 * (1 + cost(inner)), innermost 1 + 2 + 32 * (1 + 1) = 67.
    assert check_selector(NEST4) == "expression cost estimate 2232451 exceeds the limit of 1000000"
    # A literal range counts its elements, not 32.
    assert check_selector("[1, 2].all(a, [1, 2].all(b, [1].all(c, [1].all(d, true))))") is None


def test_compile_cache_returns_same_program() -> None:
    assert check_selector("nope(") == check_selector("nope(")
    with pytest.raises(CelError):
        compile_rule("nope(")
    with pytest.raises(CelError):
        compile_rule("nope(")
    assert compile_rule("true") is compile_rule("true")


@pytest.mark.parametrize(
    "expr",
    [
        'device.attributes["gpu.nvidia.com"].nope == "x"',
        'quantity("bad") == quantity("1")',
        'semver("bad") == semver("1.0.0")',
        'quantity("1.5").asInteger() == 1',
        "1 / 0 == 1",
        'device.attributes["gpu.nvidia.com"].architecture.major() == 1',
        'device.attributes["gpu.nvidia.com"].cudaComputeCapability == "9.5.3"',
        'device.attributes["gpu.nvidia.com"].architecture > 1',
        'device.attributes["gpu.nvidia.com"].architecture',
    ],
)
def test_runtime_errors_and_non_bool_are_false(expr: str) -> None:
    assert check_selector(expr) is None
    assert selector_matches(expr, GPU) is False


def test_unknown_domain_reads_empty() -> None:
    assert selector_matches('device.attributes["other.com"] == {}', GPU)
    assert selector_matches("device.attributes.other == {}", GPU)
    assert selector_matches('size(device.capacity["x"]) == 0', GPU)
    assert selector_matches("size(device.attributes) == 2", GPU)
    assert selector_matches('!("other.com" in device.capacity)', GPU)
    assert selector_matches("device.attributes[device.driver].architecture == 'Hopper'", GPU)
    assert selector_matches("device.attributes.exists(d, d == 'resource.kubernetes.io')", GPU)


def test_quantity_and_semver_equality_by_value() -> None:
    assert selector_matches('device.capacity["gpu.nvidia.com"].memory == quantity("144384Mi")', GPU)
    assert selector_matches('device.capacity["gpu.nvidia.com"].memory != quantity("141G")', GPU)
    assert selector_matches('semver("1.0.0-rc.1+x") == semver("1.0.0-rc.1")', GPU)
    assert selector_matches('[quantity("1k")].exists(q, q == quantity("1000"))', GPU)


def test_device_value_domains() -> None:
    profile = DeviceProfile.of(
        "gpu.nvidia.com",
        {"a": {"int": 1}, "gpu.nvidia.com/a": {"int": 2}, "x.io/b/c": {"string": "s"}},
        {"mem": {"value": "1Gi"}, "skip": {}},
    )
    value = device_value(profile)
    # "gpu.nvidia.com/a" sorts after "a", so it wins.
    assert value["device.attributes"] == {"gpu.nvidia.com": {"a": 2}, "x.io": {"b/c": "s"}}
    assert decode(value["device.capacity"]["gpu.nvidia.com"]["mem"]).value == 2**30
    assert selector_matches('device.attributes["x.io"]["b/c"] == "s"', profile)


def test_device_error_makes_every_selector_false() -> None:
    assert selector_matches("true", GPU)
    assert not selector_matches("true", GPU_BAD_MEMORY)
    assert not selector_matches("true", gpu_like(x={}))


def test_memo_never_changes_a_result() -> None:
    exprs = [
        'device.driver == "gpu.nvidia.com"',
        'device.attributes["nic.nvidia.com"].linkType == "infiniband"',
        'device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("100Gi"))',
    ]
    profiles = [GPU, NIC, GPU_BAD_MEMORY, gpu_like(x={"int": 1})]
    cold = {(e, p.key): selector_matches(e, p) for e in exprs for p in profiles}
    warm = {(e, p.key): selector_matches(e, p) for e in exprs for p in profiles}
    assert cold == warm
    clear_caches()
    fresh = {
        (e, p.key): selector_matches(e, p) for e in reversed(exprs) for p in reversed(profiles)
    }
    assert cold == fresh
    same = DeviceProfile.of(
        "gpu.nvidia.com",
        {  # the same entries in another order: the profile is canonical
            "resource.kubernetes.io/pcieRoot": {"string": "pci0"},
            "cudaComputeCapability": {"version": "9.5.3"},
            "architecture": {"string": "Hopper"},
        },
        {"memory": {"value": "141Gi"}},
    )
    assert same == GPU and hash(same) == hash(GPU)


def test_pool_helpers() -> None:
    pool = [NIC, GPU, GPU_BAD_MEMORY, GPU]
    exprs = [
        'device.driver == "gpu.nvidia.com"',
        'device.attributes["gpu.nvidia.com"].architecture == "Hopper"',
    ]
    assert matching_device_indexes(exprs, pool) == [1, 3]
    assert all_selectors_match([], NIC)
    assert matching_device_indexes(["not ) valid ("], pool) == []
