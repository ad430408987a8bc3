"""The Kubernetes API server's static cost estimate of CRD ``x-kubernetes-validations`` rules.

The API server refuses a CRD when one rule's estimated cost (per-evaluation cost times
the number of times the rule can run in one object) exceeds 10,000,000, or when the
rules of one version schema add up to more than 100,000,000. This module computes the
same numbers offline, from the facts of the released sources (docs/crd-cost.md):

* the type and size model of ``k8s.io/apiserver pkg/cel/common/schemas.go``
  (``SchemaDeclType``) and the path size estimator of ``k8s.io/apiextensions-apiserver
  pkg/apiserver/schema/cel/compilation.go``, Kubernetes v1.34 (v0.34.9);
* cel-go v0.26.0 ``checker/cost.go``: the static cost walk, with its size and
  entry-size tracking (and its quirks: indexing a ``filter()``/``map()`` result loses the
  schema path, so what lies below it is unbounded);
* Kubernetes' call estimator ``k8s.io/apiserver pkg/cel/library/cost.go`` and cel-go's
  ext.Sets estimators;
* cardinality and per-version totals of ``apiextensions validation/cel_validation.go``
  and ``validation.go``;
* the library each function comes from and the Kubernetes version that offers it to new
  rules (``apiserver pkg/cel/environment/base.go``).

The walk runs on cel-expr-python's parsed AST (the engine's own parser; macros arrive
expanded as cel-go expands them). Types come from our own small checker over the schema
model. Anything the estimator does not model costs 2^64-1 and is reported, so an
unmodelled construct can never pass as cheap.

This module is the public face and the schema walk (cardinality, totals); the size and
type model is ``_model``, the cost walk ``_walk``, call costs ``_calls``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ._model import (
    CEL_RESERVED,
    CRD_COST_LIMIT,
    MAX_COST,
    MAX_REQUEST_SIZE,
    RULE_COST_LIMIT,
    CelType,
    DeclType,
    Est,
    RuleError,
    _add,
    _cel_type,
    _mul,
    _nonneg,
    _size_at,
    _types,
    schema_decl_type,
)
from ._walk import (
    _LIBRARY_OF,
    SizeOf,
    _ast,
    _Coster,
    _version,
    compatibility_version,
    library_introduced,
)

__all__ = [
    "CEL_RESERVED",
    "MAX_COST",
    "RULE_COST_LIMIT",
    "CRD_COST_LIMIT",
    "DeclType",
    "RuleCost",
    "RuleEstimate",
    "VersionCost",
    "CelType",
    "Est",
    "RuleError",
    "compatibility_version",
    "estimate_crd",
    "estimate_expression",
    "estimate_rule",
    "estimate_schema",
    "max_cardinality",
    "library_introduced",
    "schema_decl_type",
    "SchemaNode",
    "schema_nodes",
]


# ---------------------------------------------------------------- rules and CRDs


@dataclass(frozen=True)
class RuleEstimate:
    """One rule's static per-evaluation cost, or why it does not compile."""

    cost: int
    error: str | None = None
    uses_old_self: bool = False
    # The libraries the rule calls and the newest one's introduction (base.go): the rule
    # compiles on servers from one minor later (``minimum_server``).
    libraries: frozenset[str] = frozenset()
    introduced: str = "1.0"

    def minimum_server(self) -> str:
        """The oldest Kubernetes API server that accepts this rule in a new CRD."""
        major, minor = _version(self.introduced)
        return f"{major}.{minor + 1}" if self.libraries else "1.0"


def estimate_rule(
    rule: str,
    decl: DeclType,
    *,
    compatibility: str = "1.33",
    optional_old_self: bool = False,
    result: str = "bool",
) -> RuleEstimate:
    """The API server's static cost estimate (``MaxCost``) of one rule on a schema node
    (``result="string"`` for a ``messageExpression``)."""
    if not rule.strip():
        # compilation.go compileRule: an empty rule compiles to nothing and costs nothing.
        return RuleEstimate(0)
    self_t = _cel_type(decl)
    old_t = CelType("optional", (self_t,)) if optional_old_self else self_t
    coster = _Coster(
        lambda path, _t: _size_at(decl, path), {"self": self_t, "oldSelf": old_t}, compatibility
    )
    try:
        root = _ast(rule)
        est = coster.cost(root)
    except RuleError as err:
        return RuleEstimate(MAX_COST, str(err))
    if coster.type(root).kind not in (result, "dyn", "free"):
        return RuleEstimate(MAX_COST, f"cel expression must evaluate to a {result}")
    if coster.unmodelled:
        return RuleEstimate(MAX_COST, _unmodelled(coster.unmodelled))
    libs = {_LIBRARY_OF[n] for n in coster.used if n in _LIBRARY_OF}
    newest = max((v for _, v in libs), key=_version, default="1.0")
    return RuleEstimate(
        est.hi, None, "oldSelf" in coster.used, frozenset(lib for lib, _ in libs), newest
    )


def _unmodelled(names: list[str]) -> str:
    shown = ", ".join(f"'{n}'" for n in sorted(set(names)))
    return f"no cost estimate for {shown}: an undeclared function, or one not modelled here"


def estimate_expression(
    text: str, size_of: SizeOf, *, compatibility: str = "1.33"
) -> tuple[int, int]:
    """The [min, max] static cost of an expression without variables, sizing what CEL does
    not know with ``size_of(path, type)``, in the environment of upstream's library cost
    tests (cost_test.go ``testCost``: no homogeneous-literal check)."""
    coster = _Coster(size_of, {}, compatibility, homogeneous=False)
    est = coster.cost(_ast(text))
    if coster.unmodelled:
        raise RuleError(_unmodelled(coster.unmodelled))
    return est.lo, est.hi


def max_cardinality(min_size: int) -> int:
    """apiextensions compilation.go maxCardinality: how often an unbounded node can occur."""
    return MAX_REQUEST_SIZE // (min_size + 1)


@dataclass(frozen=True)
class RuleCost:
    """A rule's estimated cost in one CRD version: per evaluation, times cardinality."""

    path: str
    index: int
    rule: str
    cost: int
    cardinality: int | None  # None: unbounded (the node's own estimate is used)
    total: int
    error: str | None
    # A messageExpression counts towards the CRD total once, without cardinality.
    message_cost: int = 0
    # The cardinality applied: ``cardinality``, or 3 MiB / (node min size + 1) if unbounded.
    applied: int = 1


@dataclass(frozen=True)
class VersionCost:
    """All rules of one CRD version schema and their sum."""

    crd: str
    kind: str
    version: str
    rules: tuple[RuleCost, ...]
    total: int


def _max_elements(s: Mapping[str, Any]) -> int | None:
    """cel_validation.go extractMaxElements: None is unbounded."""
    kind = _types(s)[0] if _types(s) else ""
    if kind == "object":
        if "additionalProperties" in s and s["additionalProperties"] is not False:
            return _nonneg(s["maxProperties"]) if "maxProperties" in s else None
        return 1
    if kind == "array":
        return _nonneg(s["maxItems"]) if "maxItems" in s else None
    return 1


@dataclass(frozen=True)
class SchemaNode:
    """One node of a version schema as the API server visits it."""

    schema: Mapping[str, Any]
    path: str  # data path: ``.spec.items[*].labels{*}``, "" at the root
    cardinality: int | None  # None: an enclosing list or map is unbounded
    is_root: bool  # the resource root or an embedded resource
    # Where the uncorrelatable part begins (items of a list that is not a list-map,
    # properties of an atomic map): oldSelf is refused below it. None if correlatable.
    uncorrelatable: str | None = None


def schema_nodes(
    s: Mapping[str, Any],
    path: str = "",
    card: int | None = 1,
    is_root: bool = True,
    uncorrelatable: str | None = None,
) -> Iterator[SchemaNode]:
    """Every node of a version schema, parents first (validation.go's recursion)."""
    yield SchemaNode(s, path, card, is_root, uncorrelatable)
    mx = _max_elements(s)
    child = None if card is None or mx is None else _mul(card, mx)
    shown = path or "<root>"
    atomic_map = s.get("x-kubernetes-map-type") == "atomic"
    list_map = s.get("x-kubernetes-list-type") == "map"
    children: list[tuple[Any, str, str | None]] = [
        (prop, f"{path}.{name}", uncorrelatable or (shown if atomic_map else None))
        for name, prop in (s.get("properties") or {}).items()
    ]
    children.append((s.get("items"), f"{path}[*]", uncorrelatable or (None if list_map else shown)))
    children.append((s.get("additionalProperties"), f"{path}{{*}}", uncorrelatable))
    for node, where, uncorr in children:
        if isinstance(node, Mapping):
            embedded = bool(node.get("x-kubernetes-embedded-resource"))
            yield from schema_nodes(node, where, child, embedded, uncorr)


def estimate_schema(
    schema: Mapping[str, Any], *, compatibility: str = "1.33"
) -> tuple[list[RuleCost], int]:
    """Every rule of one version's ``openAPIV3Schema`` and the version's total."""
    rules: list[RuleCost] = []
    total = 0
    for n in schema_nodes(schema):
        node, path, card, is_root = n.schema, n.path, n.cardinality, n.is_root
        validations = node.get("x-kubernetes-validations") or []
        if not validations:
            continue
        decl = schema_decl_type(node, is_root)
        shown = path or "<root>"
        for i, v in enumerate(validations):
            text = str(v.get("rule", ""))
            if decl is None:
                rules.append(
                    RuleCost(
                        shown, i, text, MAX_COST, card, MAX_COST, "no CEL type for this schema node"
                    )
                )
                total = MAX_COST
                continue
            est = estimate_rule(
                text,
                decl,
                compatibility=compatibility,
                optional_old_self=bool(v.get("optionalOldSelf")),
            )
            eff = card if card is not None else max_cardinality(decl.min_size)
            cost = _mul(est.cost, eff)
            error, message_cost = est.error, 0
            if est.uses_old_self and n.uncorrelatable is not None and not error:
                # validation.go forbidOldSelfValidations
                error = (
                    "oldSelf cannot be used on the uncorrelatable portion of the schema "
                    f"within {n.uncorrelatable}"
                )
            message = v.get("messageExpression")
            if message:
                m = estimate_rule(str(message), decl, compatibility=compatibility, result="string")
                message_cost = m.cost
                if m.error and not error:
                    error = f"messageExpression: {m.error}"
            rules.append(RuleCost(shown, i, text, est.cost, card, cost, error, message_cost, eff))
            total = _add(_add(total, cost), message_cost)
    return rules, total


def estimate_crd(crd: Mapping[str, Any], *, kubernetes: str = "1.34") -> list[VersionCost]:
    """Estimate every rule of an ``apiextensions.k8s.io/v1`` CRD, version by version, as a
    Kubernetes ``kubernetes`` API server does for a new CRD."""
    compat = compatibility_version(kubernetes)
    out = []
    for v in crd["spec"]["versions"]:
        schema = v.get("schema", {}).get("openAPIV3Schema", {})
        rules, total = estimate_schema(schema, compatibility=compat)
        out.append(
            VersionCost(
                crd["metadata"]["name"],
                crd["spec"]["names"]["kind"],
                v["name"],
                tuple(rules),
                total,
            )
        )
    return out
