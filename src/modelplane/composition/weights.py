"""Integer backend weights of a ModelService's route.

Traffic is split across the service's entries by their weights, then as evenly as
possible over the ready endpoints each entry matches. Gateway API backendRef weights
are integers in 0..1,000,000 (gateway.networking.k8s.io_httproutes.yaml,
``backendRefs[].weight``, v1), so the split is made integral:

1. the smallest common scale S at which every endpoint gets at least 1:
   S = max over entries of ceil(endpoints / weight);
2. each entry's scaled weight ``weight * S`` split evenly over its endpoints, the
   remainder one each to the first endpoints (80 over 3: 27/27/26);
3. all divided by their greatest common divisor;
4. if the largest exceeds 1,000,000, all rescaled proportionally, floor 1.

An entry's share does not depend on how many endpoints it has (scaling a deployment
does not move traffic between entries), up to the integer rounding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MAX_WEIGHT = 1_000_000


def backend_weights(entries: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Per entry ``(weight, ready endpoints)``, the integer weight of each of its endpoints.

    Entries with no endpoint get an empty list (they are dropped from the route).
    """
    live = [(w, n) for w, n in entries if n > 0]
    if not live:
        return [[] for _ in entries]
    scale = max(math.ceil(n / w) for w, n in live)
    split = [_even(w * scale, n) if n > 0 else [] for w, n in entries]
    divisor = math.gcd(*(v for values in split for v in values))
    split = [[v // divisor for v in values] for values in split]
    largest = max(v for values in split for v in values)
    if largest > MAX_WEIGHT:
        split = [[max(1, v * MAX_WEIGHT // largest) for v in values] for values in split]
    return split


def _even(total: int, count: int) -> list[int]:
    """``total`` over ``count`` as evenly as possible, the remainder to the first ones."""
    base, remainder = divmod(total, count)
    return [base + 1 if i < remainder else base for i in range(count)]
