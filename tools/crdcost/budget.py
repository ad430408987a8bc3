"""The package's cost targets and what breaks them (pure).

The API server refuses a CRD over its limits; the package keeps a margin of half of each
(docs/crd-cost.md), so a rule can grow, or the estimate be off, without a refused install.
Every problem names the CRD, its version, the field path and rule index, the estimated
cost and the target it exceeds: enough to find the rule without reading the estimator.
"""

from __future__ import annotations

from collections.abc import Iterable

from .estimate import CRD_COST_LIMIT, MAX_COST, RULE_COST_LIMIT, RuleCost, VersionCost

__all__ = ["CRD_TARGET", "RULE_TARGET", "describe_rule", "problems", "shown_cost"]

# Half of each API server limit (docs/crd-cost.md).
RULE_TARGET = RULE_COST_LIMIT // 2
CRD_TARGET = CRD_COST_LIMIT // 2


def shown_cost(cost: int) -> str:
    """A cost as the report prints it: grouped digits, or 2^64-1 for "not estimable"."""
    return "2^64-1" if cost == MAX_COST else f"{cost:,}"


def _where(v: VersionCost, r: RuleCost) -> str:
    return f"{v.crd} {v.version} {r.path} x-kubernetes-validations[{r.index}]"


def describe_rule(v: VersionCost, r: RuleCost) -> str:
    """One rule's full estimate: where it is, its cost and how it adds up, its text."""
    unbounded = " (unbounded: 3 MiB / min size)" if r.cardinality is None else ""
    return (
        f"{_where(v, r)}: cost {shown_cost(r.total)} "
        f"(= {r.cost:,} per evaluation x cardinality {r.applied:,}{unbounded}); rule: {r.rule}"
        + (f"; messageExpression cost {r.message_cost:,}" if r.message_cost else "")
        + (f"; error: {r.error}" if r.error else "")
    )


def _rule_problems(v: VersionCost, r: RuleCost, rule_target: int) -> Iterable[str]:
    if r.error:
        yield f"{_where(v, r)}: the API server would refuse the rule: {r.error}; rule: {r.rule}"
        return
    if r.total > rule_target:
        yield (
            f"{_where(v, r)}: estimated cost {shown_cost(r.total)} > target {rule_target:,} "
            f"(= {r.cost:,} per evaluation x cardinality {r.applied:,}); rule: {r.rule}"
        )
    if r.message_cost > rule_target:
        yield (
            f"{_where(v, r)}: messageExpression estimated cost {shown_cost(r.message_cost)} "
            f"> target {rule_target:,}"
        )


def problems(
    versions: Iterable[VersionCost],
    *,
    rule_target: int = RULE_TARGET,
    crd_target: int = CRD_TARGET,
) -> list[str]:
    """Every rule that would not compile or is over ``rule_target``, and every version whose
    rules add up to more than ``crd_target``, one line each."""
    out: list[str] = []
    for v in versions:
        for r in v.rules:
            out.extend(_rule_problems(v, r, rule_target))
        if v.total > crd_target:
            out.append(
                f"{v.crd} {v.version}: estimated cost of all rules {shown_cost(v.total)} "
                f"> target {crd_target:,}"
            )
    return out
