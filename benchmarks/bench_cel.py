"""CEL benchmarks (printed by ``make bench``; nothing is asserted).

1. Evaluations per second of one selector on one device, uncached: the compiled
   program is run directly against a prebuilt activation.
2. Fleet filter: 1,000 clusters x 4 pools x 8 devices drawn from 12 device
   profiles; one request with two selectors; time to find the matching pools,
   cold (fresh caches) and warm (memoised).
"""

from __future__ import annotations

import random
import time

from modelplane.cel import DeviceProfile, clear_caches, device_value, matching_device_indexes
from modelplane.cel.engine import compile_expression, new_activation

SELECTOR = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'
REQUEST = [
    'device.driver == "gpu.nvidia.com"',
    'device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.0.0")) '
    '&& device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0',
]


def _profiles() -> list[DeviceProfile]:
    gpus = [
        ("Hopper", "9.0.0", "80Gi"),
        ("Hopper", "9.0.0", "141Gi"),
        ("Ampere", "8.0.0", "40Gi"),
        ("Ampere", "8.0.0", "80Gi"),
        ("Ada", "8.9.0", "48Gi"),
        ("Blackwell", "10.0.0", "192Gi"),
        ("Blackwell", "10.0.0", "180Gi"),
        ("Turing", "7.5.0", "16Gi"),
    ]
    out = [
        DeviceProfile.of(
            "gpu.nvidia.com",
            {
                "architecture": {"string": arch},
                "cudaComputeCapability": {"version": cc},
                "resource.kubernetes.io/pcieRoot": {"string": "pci0"},
            },
            {"memory": {"value": mem}},
        )
        for arch, cc, mem in gpus
    ]
    for link in ("infiniband", "ethernet", "roce", "efa"):
        out.append(DeviceProfile.of("nic.nvidia.com", {"linkType": {"string": link}}, {}))
    return out


def single_evaluation(n: int = 100_000) -> float:
    """Evaluations per second of SELECTOR with a prebuilt activation."""
    gpu = _profiles()[1]
    program = compile_expression(SELECTOR, "selector")
    activation = new_activation("selector", device_value(gpu))
    start = time.perf_counter()
    for _ in range(n):
        program.run(activation)
    return n / (time.perf_counter() - start)


def fleet() -> list[list[list[DeviceProfile]]]:
    """Clusters -> pools -> devices, as profiles built once per distinct device."""
    rng = random.Random(7)
    profiles = _profiles()
    return [[rng.choices(profiles, k=8) for _ in range(4)] for _ in range(1000)]


def fleet_filter(clusters: list[list[list[DeviceProfile]]]) -> int:
    """Number of pools with at least one device matching the request."""
    return sum(1 for pools in clusters for pool in pools if matching_device_indexes(REQUEST, pool))


def main() -> None:
    rate = single_evaluation()
    print(f"single evaluation (uncached, prebuilt activation): {rate:,.0f} evaluations/s")
    clusters = fleet()
    clear_caches()
    start = time.perf_counter()
    matched = fleet_filter(clusters)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    fleet_filter(clusters)
    warm = time.perf_counter() - start
    print(
        f"fleet filter (1000 clusters x 4 pools x 8 devices, 12 profiles, 2 selectors): "
        f"{matched} of 4000 pools match; cold {cold * 1000:.1f} ms, warm {warm * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
