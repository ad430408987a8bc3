"""The selector expression tables, as data shared by the engine tests and the oracle."""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.cel import DeviceProfile

GPU_ATTRS: dict[str, dict[str, object]] = {
    "architecture": {"string": "Hopper"},
    "cudaComputeCapability": {"version": "9.5.3"},
    "resource.kubernetes.io/pcieRoot": {"string": "pci0"},
}
GPU_CAP: dict[str, dict[str, object]] = {"memory": {"value": "141Gi"}}


def gpu_like(**extra_attrs: dict[str, object]) -> DeviceProfile:
    return DeviceProfile.of("gpu.nvidia.com", {**GPU_ATTRS, **extra_attrs}, GPU_CAP)


GPU = DeviceProfile.of("gpu.nvidia.com", GPU_ATTRS, GPU_CAP)
NIC = DeviceProfile.of("nic.nvidia.com", {"linkType": {"string": "infiniband"}}, {})
NONE = DeviceProfile.of("", {}, {})
GPU_BAD_VERSION = gpu_like(cudaComputeCapability={"version": "9.0"})
GPU_BAD_MEMORY = DeviceProfile.of("gpu.nvidia.com", GPU_ATTRS, {"memory": {"value": "10Mo"}})


def example(type_: str, memory: str, driver: str = "driver.example.com") -> DeviceProfile:
    return DeviceProfile.of(driver, {"type": {"string": type_}}, {"memory": {"value": memory}})


A = 'device.attributes["gpu.nvidia.com"]'
C = 'device.capacity["gpu.nvidia.com"]'

# expected: True / False, or "compile:<kind>" (syntax, check, result, cost).
CompileKind = str


@dataclass(frozen=True)
class Row:
    id: str
    expr: str
    device: DeviceProfile
    expected: bool | CompileKind
    # Why cel-python cannot serve as the oracle for this row (None: it can).
    engine_only: str | None = None


STYLE = "cel-python does not type-check or enforce member/global call styles"
UNTYPED = "cel-python does not type-check, so it cannot refuse at compile time"

DEVICE_ROWS: list[Row] = [
    Row("row-1a", 'device.driver == "gpu.nvidia.com"', GPU, True),
    Row("row-1b", 'device.driver == "nic.nvidia.com"', GPU, False),
    Row("row-2a", f'{C}.memory.compareTo(quantity("141Gi")) >= 0', GPU, True),
    Row("row-2b", f'{C}.memory.compareTo(quantity("200Gi")) >= 0', GPU, False),
    Row("row-3a", f'{C}.memory.isGreaterThan(quantity("80Gi"))', GPU, True),
    Row("row-3b", f'{C}.memory.isLessThan(quantity("200Gi"))', GPU, True),
    Row("row-4", f"{C}.memory.sign() == 1", GPU, "compile:check", STYLE),
    Row("row-5a", f"sign({C}.memory) == 1", GPU, True),
    Row("row-5b", f"{C}.memory.isInteger()", GPU, True),
    Row("row-5c", f"{C}.memory.asInteger() == 151397597184", GPU, True),
    Row("row-6", f'{C}.memory.add(quantity("1Gi")).compareTo(quantity("142Gi")) == 0', GPU, True),
    Row("row-7a", 'isQuantity("1.3Gi")', NONE, True),
    Row("row-7b", 'isQuantity("200K")', NONE, False),
    Row("row-8a", f'{A}.cudaComputeCapability.isGreaterThan(semver("9.0.0"))', GPU, True),
    Row("row-8b", f'{A}.cudaComputeCapability.isGreaterThan(semver("9.9.0"))', GPU, False),
    Row("row-9a", f"{A}.cudaComputeCapability.major() == 9", GPU, True),
    Row("row-9b", f"{A}.cudaComputeCapability.minor() == 5", GPU, True),
    Row("row-9c", f"{A}.cudaComputeCapability.patch() == 3", GPU, True),
    Row("row-10", f'{A}.cudaComputeCapability == semver("9.5.3")', GPU, True),
    Row("row-11a", 'isSemver("1.0.0")', NONE, True),
    Row("row-11b", 'isSemver("1.0")', NONE, False),
    Row("row-11c", 'isSemver("1.0", true)', NONE, True),
    Row("row-12", 'semver("v1.0", true).major() == 1', NONE, True),
    Row("row-13", f'{A}.architecture == "Hopper"', GPU, True),
    Row("row-14", 'device.attributes["nic.nvidia.com"].linkType == "infiniband"', NIC, True),
    Row("row-15a", f"{A}.x", gpu_like(x={"bool": True}), True),
    Row("row-15b", f"{A}.x", gpu_like(x={"bool": False}), False),
    Row("row-16a", f"{A}.x >= 8", gpu_like(x={"int": 8}), True),
    Row("row-16b", f"{A}.x >= 8", gpu_like(x={"int": 4}), False),
    Row("row-17", 'device.attributes["resource.kubernetes.io"].pcieRoot == "pci0"', GPU, True),
    Row(
        "row-18",
        f'{A}.cudaComputeCapability.isGreaterThan(semver("8.0.0"))',
        GPU_BAD_VERSION,
        False,
    ),
    Row("row-19", f'{C}.memory.compareTo(quantity("1Gi")) >= 0', GPU_BAD_MEMORY, False),
    Row("row-20", f'{A}.nope == "x"', GPU, False),
    Row("row-21", '"5"', NONE, "compile:result", UNTYPED),
    Row("row-22", f"{A}.x", gpu_like(x={"int": 5}), False),
    Row("row-23a", '"other.com" in device.attributes', GPU, False),
    Row("row-23b", '"gpu.nvidia.com" in device.attributes', GPU, True),
    Row("row-24", 'device.attributes["other.com"].x == "y"', GPU, False),
    Row(
        "row-25",
        f'"gpu.nvidia.com" in device.attributes && {A}.architecture == "Hopper"',
        GPU,
        True,
    ),
    Row(
        "row-26",
        f'{A}.cudaComputeCapability.isGreaterThan(semver("9.0.0")) && '
        f'{C}.memory.compareTo(quantity("141Gi")) >= 0',
        GPU,
        True,
    ),
    Row(
        "row-27a",
        'device.attributes["driver.example.com"].type == "gpu" && '
        'device.capacity["driver.example.com"].memory == quantity("64Gi")',
        example("gpu", "64Gi"),
        True,
    ),
    Row(
        "row-27b",
        'device.attributes["driver.example.com"].type == "gpu" && '
        'device.capacity["driver.example.com"].memory == quantity("64Gi")',
        example("gpu", "32Gi"),
        False,
    ),
    Row(
        "row-28a",
        "device.driver == 'gpu.example.com' && device.attributes['gpu.example.com'].type == 'gpu'",
        example("gpu", "1", driver="gpu.example.com"),
        True,
    ),
    Row(
        "row-28b",
        "device.driver == 'gpu.example.com' && device.attributes['gpu.example.com'].type == 'gpu'",
        NIC,
        False,
    ),
    Row("row-29", 'has(device.attributes["gpu.nvidia.com"])', NONE, "compile:syntax", UNTYPED),
    Row("row-30", "device.count >= 1", NONE, "compile:check", UNTYPED),
]


def _q(id_: str, expr: str, expected: bool | CompileKind, engine_only: str | None = None) -> Row:
    return Row(id_, expr, NONE, expected, engine_only)


def _each(prefix: str, fn: str, values: list[str], expected: bool) -> list[Row]:
    return [
        _q(f"{prefix}-{i}", f"{fn}({v!r})".replace("'", '"'), expected)
        for i, v in enumerate(values)
    ]


Q_ROWS: list[Row] = [
    _q("Q1", 'quantity("12Mi").compareTo(quantity("12Mi")) == 0', True),
    *_each(
        "Q2",
        "isQuantity",
        [
            "20",
            "20M",
            "20Mi",
            "256e3",
            "1E3",
            "100n",
            "100u",
            "5.",
            "1.3G",
            "1.3Gi",
            "10000k",
            "256E",
            "10E",
        ],
        True,
    ),
    *_each(
        "Q3", "isQuantity", ["20Mo", "10Mm", " 5Gi", "5Gi ", "1,3G", "200K", "Three", ""], False
    ),
    _q("Q4", 'isQuantity("Mi")', True),
    _q("Q5a", 'quantity("Mi") == quantity("0")', True),
    _q("Q5b", 'isQuantity("Pi")', False),
    _q("Q5c", 'isQuantity("Ei")', False),
    _q("Q6", 'quantity("256e3").compareTo(quantity("256000")) == 0', True),
    _q("Q7", 'quantity("0.0000000004").compareTo(quantity("0.000000001")) == 0', True),
    _q("Q8a", 'quantity("200M") == quantity("200M")', True),
    _q("Q8b", 'quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")', True),
    _q(
        "Q8c",
        'quantity("2M") == quantity("0.002G") && quantity("0.002G") == quantity("2000k") '
        '&& quantity("2M") == quantity("2000k")',
        True,
    ),
    _q("Q9", 'quantity("200M") == quantity("0.3G")', False),
    _q("Q10a", 'quantity("50M").isLessThan(quantity("50Mi"))', True),
    _q("Q10b", 'quantity("50M").isLessThan(quantity("100M"))', True),
    _q("Q10c", 'quantity("100M").isLessThan(quantity("50M"))', False),
    _q("Q11a", 'quantity("50Mi").isGreaterThan(quantity("50M"))', True),
    _q("Q11b", 'quantity("150Mi").isGreaterThan(quantity("100Mi"))', True),
    _q("Q11c", 'quantity("50M").isGreaterThan(quantity("100M"))', False),
    _q("Q12a", 'quantity("200M").compareTo(quantity("0.2G")) == 0', True),
    _q("Q12b", 'quantity("50M").compareTo(quantity("50Mi")) == -1', True),
    _q("Q12c", 'quantity("50Mi").compareTo(quantity("50M")) == 1', True),
    _q("Q13", 'quantity("50k").add(quantity("20")) == quantity("50.02k")', True),
    _q("Q14", 'quantity("50k").add(20).isLessThan(quantity("50020"))', False),
    _q("Q15a", 'quantity("50k").sub(quantity("20")) == quantity("49.98k")', True),
    _q("Q15b", 'quantity("50k").sub(20) == quantity("49980")', True),
    _q("Q16", 'quantity("50k").add(20).sub(quantity("100k")).asInteger() == -49980', True),
    _q("Q17", 'quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() == 20', True),
    _q("Q18a", 'sign(quantity("50k")) == 1', True),
    _q("Q18b", 'sign(quantity("-50k")) == -1', True),
    _q("Q18c", 'sign(quantity("0")) == 0', True),
    _q("Q19a", 'quantity("8Ei").compareTo(quantity("9223372036854775807")) == 0', True),
    _q("Q19b", 'quantity("-10Ei").compareTo(quantity("-9223372036854775807")) == 0', True),
    _q("Q20a", 'quantity("8Ei").compareTo(quantity("10Ei")) == 0', True),
    _q("Q20b", 'quantity("10Ei").compareTo(quantity("100Ei")) == 0', True),
    _q("Q20c", 'quantity("7Ei").isLessThan(quantity("8Ei"))', True),
    _q("Q21a", 'quantity("256E").compareTo(quantity("256000000000000000000")) == 0', True),
    _q("Q21b", 'quantity("256E").isGreaterThan(quantity("1Ei"))', True),
    _q("Q22a", 'quantity("50k").asInteger() == 50000', True),
    _q("Q22b", 'quantity("50").isInteger()', True),
    _q("Q22c", 'quantity("50000000G").isInteger()', True),
    _q("Q23", 'quantity("9999999999999999999999999999999999999G").isInteger()', False),
    _q("Q24", 'quantity("9999999999999999999999999999999999999G").asInteger() > 0', False),
    _q("Q25", 'quantity("50.703k").asApproximateFloat() == 50703.0', True),
    _q("Q26", 'quantity("10Mo").isGreaterThan(quantity("1"))', False),
]

S_ROWS: list[Row] = [
    _q("S1a", 'semver("1.2.3").compareTo(semver("1.2.3")) == 0', True),
    _q("S1b", 'semver("0.1.0-alpha.1").major() == 0', True),
    *_each("S2", "isSemver", ["1.2.3-beta.1+build.1", "1.0.0"], True),
    *_each(
        "S3",
        "isSemver",
        [
            "hello",
            "",
            "v1.0.0",
            "v1.0",
            " 1.0.0",
            "1. 0.0",
            "1.0.0 ",
            "01.01.01",
            "1",
            "1.1",
            "200K",
            "Mi",
        ],
        False,
    ),
    *[
        _q(f"S4-{i}", f'isSemver("{v}", true)', False)
        for i, v in enumerate(["", " 1.0.0", "1. 0.0", "1.0.0 "])
    ],
    *[
        _q(f"S5-{i}", f'isSemver("{v}", true)', True)
        for i, v in enumerate(["v1.0.0", "01.01.01", "1", "1.1"])
    ],
    _q("S6", 'semver("v01.01", true) == semver("1.1.0")', True),
    _q("S7a", 'semver("v1.0.0", true).major() == 1', True),
    _q("S7b", 'semver("1.0", true).patch() == 0', True),
    _q("S7c", 'semver("01.01.01", true).minor() == 1', True),
    _q("S8a", 'semver("1.2.3") == semver("1.2.3")', True),
    _q("S8b", 'semver("1.2.3") == semver("1.0.0")', False),
    _q("S9a", 'semver("1.0.0").isLessThan(semver("1.2.3"))', True),
    _q("S9b", 'semver("1.0.0").isLessThan(semver("1.0.0"))', False),
    _q("S9c", 'semver("1.2.3").isGreaterThan(semver("1.0.0"))', True),
    _q("S9d", 'semver("1.0.0").isGreaterThan(semver("1.0.0"))', False),
    _q("S10a", 'semver("1.2.3").compareTo(semver("1.2.3")) == 0', True),
    _q("S10b", 'semver("1.2.3").compareTo(semver("2.0.0")) == -1', True),
    _q("S10c", 'semver("1.2.3").compareTo(semver("0.1.2")) == 1', True),
    _q("S11a", 'semver("1.2.3").major() == 1', True),
    _q("S11b", 'semver("1.2.3").minor() == 2', True),
    _q("S11c", 'semver("1.2.3").patch() == 3', True),
    _q("S12", 'semver("v1.0").major() == 1', False),
    _q("S13a", 'semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))', True),
    _q("S13b", 'semver("1.0.0-rc.1").isLessThan(semver("1.0.0-rc.1.1"))', True),
    _q("S13c", 'semver("1.0.0-1").isLessThan(semver("1.0.0-a"))', True),
    _q("S14", 'semver("1.0.0+a") == semver("1.0.0+b")', True),
]

ALL_ROWS: list[Row] = DEVICE_ROWS + Q_ROWS + S_ROWS
