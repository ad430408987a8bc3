"""Matching one member's device requests against one pool's devices (docs/scheduling.md, "Matching,
placing and packing").
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.api import EngineMember
from modelplane.cel import all_selectors_match
from modelplane.memo import memoized
from modelplane.scheduling.fleet import PoolShape
from modelplane.scheduling.model import ResolvedRequest


@dataclass(frozen=True, slots=True)
class Request:
    """One device request: its name, per-pod count and non-empty CEL selectors."""

    name: str
    count: int
    selectors: tuple[str, ...]


# A member's requests; None when it has no nodeSelector (it matches every pool, claimless).
Requests = tuple[Request, ...] | None


def member_requests(member: EngineMember) -> Requests:
    """The requests of a deployment member, selectors verbatim with empty ones dropped
    (docs/scheduling.md, "Inputs, identity and result").
    """
    if member.node_selector is None:
        return None
    return tuple(
        Request(r.name, r.count, tuple(s.cel for s in r.selectors if s.cel))
        for r in member.node_selector.devices
    )


@dataclass(frozen=True, slots=True)
class Match:
    """The result of ``match(member, pool)``.

    When ``ok``: ``resolved`` lists the DRA requests and ``demand`` the
    per-pod demand as (device index, count) pairs in device order.
    When not: the failing request, and for explain the first device whose selectors
    all hold with its remaining count (None when no device matched the selectors).
    """

    ok: bool
    resolved: tuple[ResolvedRequest, ...] = ()
    demand: tuple[tuple[int, int], ...] = ()
    failed_request: str = ""
    failed_count: int = 0
    failed_device: str | None = None
    failed_remaining: int = 0

    @property
    def claims(self) -> bool:
        """The member matches and has something to claim here."""
        return self.ok and bool(self.resolved)


_CLAIMLESS = Match(ok=True)


def match(requests: Requests, shape: PoolShape) -> Match:
    """``match(member, pool)``: first fit of each request over the pool's devices."""
    if requests is None:
        return _CLAIMLESS
    return _match(requests, shape)


@memoized("scheduling.matches", 1 << 15)
def _match(requests: tuple[Request, ...], shape: PoolShape) -> Match:
    # Cached per (member requests, pool shape): a pure function of both (docs/scheduling.md, "Device
    # selectors").
    devices = shape.devices
    # A DRA device without a class can never be claimed: it is skipped.
    usable = [not (d.dra and not d.device_class_name) for d in devices]
    remaining = [d.count for d in devices]
    assigned: list[int] = []
    for request in requests:
        chosen = -1
        first_true = -1
        for j, device in enumerate(devices):
            if not usable[j]:
                continue
            # Selectors are evaluated only where they can still change the outcome.
            wanted = remaining[j] >= request.count or first_true < 0
            if wanted and all_selectors_match(request.selectors, device.profile):
                if first_true < 0:
                    first_true = j
                if remaining[j] >= request.count:
                    chosen = j
                    break
        if chosen < 0:
            return Match(
                ok=False,
                failed_request=request.name,
                failed_count=request.count,
                failed_device=devices[first_true].name if first_true >= 0 else None,
                failed_remaining=remaining[first_true] if first_true >= 0 else 0,
            )
        remaining[chosen] -= request.count
        assigned.append(chosen)
    resolved: list[ResolvedRequest] = []
    demand: dict[int, int] = {}
    for request, j in zip(requests, assigned, strict=True):
        device = devices[j]
        if device.dra:
            resolved.append(
                ResolvedRequest(
                    request.name, device.device_class_name or "", request.count, request.selectors
                )
            )
            demand[j] = demand.get(j, 0) + request.count
    return Match(ok=True, resolved=tuple(resolved), demand=tuple(sorted(demand.items())))
