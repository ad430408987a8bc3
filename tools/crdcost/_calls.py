"""Call costs of the CRD rule cost walk (see :mod:`tools.crdcost`).

Which overloads the checker keeps for a call and its result type (our approximation of
cel-go's checker), cel-go v0.26.0 ``checker/cost.go`` ``functionCost`` by overload, and
Kubernetes' call estimator ``k8s.io/apiserver pkg/cel/library/cost.go`` (v0.34.9) by
function name. Both estimators mirror upstream's ``switch`` statements branch by branch, so
each can be read against its source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from ._model import (
    _DYN,
    _MAX_FORMAT_SIZE,
    _MAX_NAME_FORMAT_REGEX,
    _ONE,
    _REGEX_FACTOR,
    _STRING_FACTOR,
    _T,
    _UNKNOWN,
    _ZERO,
    MAX_COST,
    CelType,
    Est,
    RuleError,
    _add,
    _is,
    _join,
    _list,
    _map,
    _mul,
)


@dataclass
class Entry:
    """cel-go entrySizeEstimate: the key/index and value sizes of a container value."""

    container: str  # list or map
    key: Est
    val: Est

    def union(self, o: Entry | None) -> Entry | None:
        if o is None:
            return None
        return Entry(self.container, self.key.union(o.key), self.val.union(o.val))


@dataclass
class Arg:
    """cel-go astNode: what a call estimator sees of an argument."""

    path: list[str] | None
    type: CelType
    node: Any  # the expression node, None for a list element
    size: Est | None  # ComputedSize


class Sizes(Protocol):
    """What the call estimators read from (and record in) the walk."""

    def entry(self, e: Any) -> Entry | None:
        """The entry size of an expression, if known."""

    def set_entry(self, e: Any, entry: Entry) -> None:
        """Record the entry size of a call's result."""

    def arg_size(self, a: Arg) -> Est:
        """Kubernetes' sizeEstimate: computed size, else the schema, else unknown."""


def _computed(a: Arg) -> Est:
    # cel-go sizeOrUnknown on an AstNode: only its ComputedSize.
    return _UNKNOWN if a.size is None else a.size


def celgo_call(
    c: Sizes,
    e: Any,
    ov: str,
    target: Arg | None,
    args: list[Arg],
    arg_costs: list[Est],
    arg_sum: Est,
) -> tuple[Est, Est | None]:
    """cel-go checker/cost.go functionCost, by overload."""
    sz = _computed
    if ov == "string_format" and target is not None:
        return sz(target).factor(_STRING_FACTOR).add(arg_sum), None
    if ov == "string_to_bytes":
        s = sz(args[0])
        return s.factor(_STRING_FACTOR).add(arg_sum), Est(s.lo, _mul(s.hi, 4))
    if ov == "bytes_to_string":
        s = sz(args[0])
        return s.factor(_STRING_FACTOR).add(arg_sum), Est(s.lo // 4, s.hi)
    if ov == "strings_quote":
        s = sz(args[0])
        return s.factor(_STRING_FACTOR).add(arg_sum), Est(_add(s.lo, 2), _add(_mul(s.hi, 2), 2))
    if ov in ("starts_with_string", "ends_with_string"):
        return sz(args[0]).factor(_STRING_FACTOR).add(arg_sum), None
    if ov == "in_list":
        return sz(args[1]).factor(1).add(arg_sum), None
    if ov == "matches_string" and target is not None:
        s = sz(target).add(_ONE).factor(_STRING_FACTOR)
        r = sz(args[0]).factor(_REGEX_FACTOR)
        return s.mul(r).add(arg_sum), None
    if ov == "contains_string" and target is not None:
        s = sz(target).factor(_STRING_FACTOR)
        r = sz(args[0]).factor(_STRING_FACTOR)
        return s.mul(r).add(arg_sum), None
    if ov == "logical":
        lhs, rhs = arg_costs
        return Est(lhs.lo, lhs.add(rhs).hi), None
    if ov == "conditional":
        assert args[1].node is not None and args[2].node is not None
        size = sz(args[1]).union(sz(args[2]))
        e1, e2 = c.entry(args[1].node), c.entry(args[2].node)
        joined = e1.union(e2) if e1 is not None else None
        if joined is not None:
            c.set_entry(e, joined)
        c0, c1, c2 = arg_costs
        return c0.add(c1.union(c2)), size
    if ov in ("add_string", "add_bytes", "add_list"):
        assert args[0].node is not None and args[1].node is not None
        result = sz(args[0]).add(sz(args[1]))
        e0, e1 = c.entry(args[0].node), c.entry(args[1].node)
        joined = e0.union(e1) if e0 is not None else None
        if joined is not None:
            c.set_entry(e, joined)
        if ov == "add_list":
            return _ONE.add(arg_sum), result
        return result.factor(_STRING_FACTOR).add(arg_sum), result
    if ov in ("equals", "not_equals", "compare_string"):
        lhs, rhs = sz(args[0]), sz(args[1])
        smallest = min(lhs.hi, rhs.hi)
        return Est(1 if smallest > 0 else 0, smallest).factor(_STRING_FACTOR).add(arg_sum), None
    if ov == "unmodelled":
        return _UNKNOWN, None
    return _ONE.add(arg_sum), None


def k8s_call(
    c: Sizes, fn: str, ov: str, target: Arg | None, args: list[Arg]
) -> tuple[Est, Est | None] | None:
    """apiserver pkg/cel/library/cost.go EstimateCallCost (by function name)."""
    sz = c.arg_size
    if fn in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
        if target is None:
            return None
        el = list_element(target)
        if el is not None:
            el_cost = _ONE
            if el.type.kind in ("string", "bytes"):
                el_cost = el_cost.add(sz(el).factor(_STRING_FACTOR))
            return sz(target).mul(el_cost), None
        return sz(target).factor(_STRING_FACTOR), None
    if fn == "url" and len(args) == 1:
        s = sz(args[0])
        return s.factor(_STRING_FACTOR), s
    if fn in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
        s = sz(target)
        return s.factor(_STRING_FACTOR), s
    if fn == "replace" and target is not None and len(args) >= 2:
        return k8s_replace(sz(target), sz(args[0]), sz(args[1]))
    if fn == "split" and target is not None:
        s = sz(target)
        mx = s.hi
        if len(args) > 1 and args[1].node is not None and args[1].node.kind == "lit":
            v = args[1].node.value
            if isinstance(v, int) and not isinstance(v, bool):
                mx = v % 2**64  # Go converts int64 to uint64
        return s.factor(2 * _STRING_FACTOR), Est(0, mx)
    if fn == "join" and target is not None:
        size = _ZERO
        n = sz(target)
        el = list_element(target)
        if el is not None:
            size = n.mul(sz(el))
        if args:
            sep = sz(args[0])
            seps = Est(max(n.lo - 1, 0), max(n.hi - 1, 0))
            size = size.add(sep.mul(seps))
        return size.factor(_STRING_FACTOR), size
    if fn in ("find", "findAll") and target is not None and args:
        s = sz(target)
        str_cost = s.add(_ONE).factor(_STRING_FACTOR)
        return str_cost.mul(sz(args[0]).factor(_REGEX_FACTOR)), Est(0, s.hi)
    if fn in ("cidr", "isIP", "isCIDR") and args:
        return sz(args[0]).factor(_STRING_FACTOR), None
    if fn == "ip":
        if ov == "cidr_ip":
            return _ONE, None
        if args:
            return sz(args[0]).factor(_STRING_FACTOR), None
    if fn == "ip.isCanonical" and args:
        return sz(args[0]).factor(2 * _STRING_FACTOR), None
    if fn in (
        [
            "masked",
            "prefixLength",
            "family",
            "isUnspecified",
            "isLoopback",
            "isLinkLocalMulticast",
            "isLinkLocalUnicast",
            "isGlobalUnicast",
        ]
    ):
        return _ONE, None
    if fn in ("containsIP", "containsCIDR") and args:
        ipsz = Est(4, 16)
        cost = ipsz.add(ipsz).factor(_STRING_FACTOR)
        if fn == "containsCIDR":
            cost = cost.add(ipsz.factor(_STRING_FACTOR)).add(_ONE)
        if ov.endswith("_string"):
            cost = cost.add(sz(args[0]).factor(_STRING_FACTOR))
        return cost, None
    if fn in ("quantity", "isQuantity", "semver", "isSemver") and args:
        return sz(args[0]).factor(_STRING_FACTOR), None
    if fn == "validate" and args:
        cost = sz(args[0]).factor(_STRING_FACTOR)
        return cost.factor(_MAX_NAME_FORMAT_REGEX * _REGEX_FACTOR), None
    if fn == "format.named" or fn in (
        [
            "sign",
            "asInteger",
            "isInteger",
            "asApproximateFloat",
            "isGreaterThan",
            "isLessThan",
            "compareTo",
            "add",
            "sub",
            "major",
            "minor",
            "patch",
            "getScheme",
            "getHostname",
            "getHost",
            "getPort",
            "getEscapedPath",
            "getQuery",
        ]
    ):
        return _ONE, None
    if fn == "_==_" and len(args) == 2 and args[0].type == args[1].type:
        k = args[0].type.kind
        if k in ("ip", "cidr", "quantity", "semver"):
            return _ONE, None
        if k == "format":
            return Est(1, _MAX_FORMAT_SIZE).factor(_STRING_FACTOR), None
        if k == "url":
            # Upstream reads the right-hand size twice (lhSize := rhs.ComputedSize()).
            r = args[1].size
            size = r.union(r) if r is not None else _ONE
            return Est(1, size.hi).factor(_STRING_FACTOR), None
    return None


def k8s_replace(s: Est, old: Est, new: Est) -> tuple[Est, Est | None]:
    count_hi = count_lo = 0
    kept_hi = kept_lo = 0
    if old.lo == 0:
        count_hi = s.hi + 1 if s.hi < MAX_COST else s.hi
        kept_hi = s.hi
    elif new.hi <= old.lo:
        count_hi, kept_hi = 0, s.hi
    else:
        count_hi = _factor_div(s.hi, old.lo)
    if old.hi == 0:
        count_lo = s.lo + 1 if s.lo < MAX_COST else s.lo
        kept_lo = s.lo
    elif old.hi <= new.lo:
        count_lo, kept_lo = 0, s.lo
    else:
        count_lo = _factor_div(s.lo, old.hi)
    size = Est(count_lo, count_hi).mul(new).add(Est(kept_lo, kept_hi))
    return s.factor(2 * _STRING_FACTOR), size


def list_element(target: Arg) -> Arg | None:
    if not target.type.params:
        return None
    t = target.type.params[0]
    if target.path:
        return Arg(target.path + ["@items"], t, None, None)
    return Arg(None, t, None, None)


def _factor_div(a: int, b: int) -> int:
    c = math.ceil(float(a) / float(b))
    return MAX_COST if c >= 2.0**64 else int(c)


# ---------------------------------------------------------------- overloads and result types

_BOOL = _T["bool"]
_INT = _T["int"]
_STR = _T["string"]
_COMPARE = frozenset({"_<_", "_<=_", "_>_", "_>=_"})
_ARITH = frozenset({"_-_", "_*_", "_/_", "_%_", "-_"})
_O1_RESULT: dict[str, CelType] = {
    "@not_strictly_false": _BOOL,
    "!_": _BOOL,
    "size": _INT,
    "int": _INT,
    "uint": _T["uint"],
    "double": _T["double"],
    "bool": _BOOL,
    "duration": _T["duration"],
    "timestamp": _T["timestamp"],
    "type": _T["type"],
    "matches": _BOOL,  # the global form: O(1) in cel-go (only matches_string is priced)
    "charAt": _STR,
    "getFullYear": _INT,
    "getMonth": _INT,
    "getDayOfYear": _INT,
    "getDayOfMonth": _INT,
    "getDate": _INT,
    "getDayOfWeek": _INT,
    "getHours": _INT,
    "getMinutes": _INT,
    "getSeconds": _INT,
    "getMilliseconds": _INT,
    "cel.@mapInsert": CelType("map", (_DYN, _DYN)),
    # Kubernetes libraries (their cost comes from the call estimator).
    "isSorted": _BOOL,
    "indexOf": _INT,
    "lastIndexOf": _INT,
    "url": _T["url"],
    "isURL": _BOOL,
    "getScheme": _STR,
    "getHost": _STR,
    "getHostname": _STR,
    "getPort": _STR,
    "getEscapedPath": _STR,
    "getQuery": _map(_STR, _list(_STR)),
    "lowerAscii": _STR,
    "upperAscii": _STR,
    "substring": _STR,
    "trim": _STR,
    "replace": _STR,
    "split": _list(_STR),
    "join": _STR,
    "find": _STR,
    "findAll": _list(_STR),
    "quantity": _T["quantity"],
    "isQuantity": _BOOL,
    "sign": _INT,
    "isGreaterThan": _BOOL,
    "isLessThan": _BOOL,
    "compareTo": _INT,
    "asInteger": _INT,
    "isInteger": _BOOL,
    "asApproximateFloat": _T["double"],
    "semver": _T["semver"],
    "isSemver": _BOOL,
    "major": _INT,
    "minor": _INT,
    "patch": _INT,
    "ip": _T["ip"],
    "isIP": _BOOL,
    "ip.isCanonical": _BOOL,
    "family": _INT,
    "isUnspecified": _BOOL,
    "isLoopback": _BOOL,
    "isLinkLocalMulticast": _BOOL,
    "isLinkLocalUnicast": _BOOL,
    "isGlobalUnicast": _BOOL,
    "cidr": _T["cidr"],
    "isCIDR": _BOOL,
    "containsIP": _BOOL,
    "containsCIDR": _BOOL,
    "masked": _T["cidr"],
    "prefixLength": _INT,
    "format.named": CelType("optional", (_T["format"],)),
    "validate": CelType("optional", (_list(_STR),)),
    "sets.contains": _BOOL,
    "sets.equivalent": _BOOL,
    "sets.intersects": _BOOL,
    "optional.none": CelType("optional", (_DYN,)),
    "hasValue": _BOOL,
}
_STRING_MEMBER = {
    "contains": "contains_string",
    "startsWith": "starts_with_string",
    "endsWith": "ends_with_string",
}


def _resolve(fn: str, target: Arg | None, args: list[Arg]) -> tuple[list[str], CelType]:
    """The overloads the checker keeps for a call (by cost class) and its result type."""
    ts = [a.type for a in args]
    tt = target.type if target is not None else None
    if fn in ("_&&_", "_||_"):
        return ["logical"], _BOOL
    if fn == "_?_:_":
        return ["conditional"], _join(ts[1], ts[2]) if ts[1].kind != "null" else ts[2]
    if fn in ("_==_", "_!=_"):
        if not _comparable(ts[0], ts[1]):
            raise RuleError(
                f"found no matching overload for '{fn}' applied to '({ts[0].kind}, {ts[1].kind})'"
            )
        return ["equals" if fn == "_==_" else "not_equals"], _BOOL
    if fn in _COMPARE:
        if not _orderable(ts[0], ts[1]):
            raise RuleError(
                f"found no matching overload for '{fn}' applied to '({ts[0].kind}, {ts[1].kind})'"
            )
        ovs = []
        if all(_is(t, "string") for t in ts) or all(_is(t, "bytes") for t in ts):
            ovs.append("compare_string")
        if not all(t.kind in ("string", "bytes") for t in ts):
            ovs.append("o1")
        return ovs, _BOOL
    if fn == "_+_":
        return _resolve_add(ts)
    if fn in _ARITH:
        return ["o1"], ts[0] if ts[0].kind != "dyn" and len(ts) > 1 else ts[0]
    if fn == "_[_]":
        return _resolve_index(ts)
    if fn == "@in":
        ovs = []
        if _is(ts[1], "list"):
            ovs.append("in_list")
        if _is(ts[1], "map"):
            ovs.append("o1")
        if not ovs:
            raise RuleError(f"found no matching overload for 'in' on '{ts[1].kind}'")
        return ovs, _BOOL
    if fn == "matches" and tt is not None:
        _want(fn, tt, "string")
        return ["matches_string"], _BOOL
    if fn in _STRING_MEMBER and tt is not None:
        _want(fn, tt, "string")
        return [_STRING_MEMBER[fn]], _BOOL
    if fn == "string":
        return _conversion(ts[0], "bytes", "bytes_to_string"), _STR
    if fn == "bytes":
        return _conversion(ts[0], "string", "string_to_bytes"), _T["bytes"]
    if fn == "format" and tt is not None:
        return ["string_format"], _STR
    if fn == "strings.quote":
        return ["strings_quote"], _STR
    if fn.startswith("sets."):
        return [fn.replace(".", "_")], _BOOL
    if fn.startswith("format."):
        return ["o1"], _O1_RESULT.get(fn, _T["format"])
    if fn in ("sum", "min", "max") and tt is not None:
        return ["o1"], tt.params[0] if tt.params else _DYN
    if fn == "ip" and tt is not None:
        return ["cidr_ip"], _T["ip"]
    if fn in ("containsIP", "containsCIDR"):
        suffix = "_string" if ts and _is(ts[0], "string") else ""
        return [f"{fn}{suffix}"], _BOOL
    if fn in ("add", "sub") and tt is not None:
        return ["o1"], tt
    if fn in ("optional.of", "optional.ofNonZeroValue"):
        return ["o1"], CelType("optional", (ts[0],))
    if fn in ("value", "orValue") and tt is not None and tt.kind == "optional":
        if fn == "orValue" and ts and not _comparable(tt.params[0], ts[0]):
            raise RuleError(
                f"found no matching overload for 'orValue' applied to "
                f"'optional({tt.params[0].kind}).({ts[0].kind})'"
            )
        return ["o1"], tt.params[0]
    if fn == "or" and tt is not None:
        return ["o1"], tt
    if fn in _O1_RESULT:
        return ["o1"], _O1_RESULT[fn]
    # Not modelled (e.g. ext.Lists v3): conservative.
    return ["unmodelled"], _DYN


_NULLABLE = frozenset({"object", "list", "map", "timestamp", "duration", "null", "optional"})


def _comparable(a: CelType, b: CelType) -> bool:
    """Whether ``==`` type-checks: cel-go declares it ``(A, A) -> bool``, so both sides must
    unify (dyn with anything; null with objects, lists, maps and the time types)."""
    if a.kind in ("dyn", "free") or b.kind in ("dyn", "free"):
        return True
    if "null" in (a.kind, b.kind):
        return a.kind in _NULLABLE and b.kind in _NULLABLE
    if a.kind != b.kind:
        return False
    if a.kind == "object":
        return a.decl is b.decl
    return all(_comparable(x, y) for x, y in zip(a.params, b.params, strict=False))


_NUMBERS = frozenset({"int", "uint", "double"})
_ORDERED = frozenset({"string", "bytes", "bool", "timestamp", "duration"})


def _orderable(a: CelType, b: CelType) -> bool:
    """Whether ``<`` and friends type-check: the same ordered type, or two numbers
    (CrossTypeNumericComparisons, enabled from 1.28 in base.go). Quantities, semvers,
    lists, maps and objects have no ``<``."""
    if a.kind in ("dyn", "free") or b.kind in ("dyn", "free"):
        return True
    if a.kind in _NUMBERS and b.kind in _NUMBERS:
        return True
    return a.kind == b.kind and a.kind in _ORDERED


def _conversion(t: CelType, priced_from: str, priced: str) -> list[str]:
    """The overloads of a conversion: only the one from ``priced_from`` is not O(1)."""
    if t.kind == priced_from:
        return [priced]
    if _is(t, priced_from):
        return ["o1", priced]
    return ["o1"]


def _want(fn: str, t: CelType, kind: str) -> None:
    if not _is(t, kind):
        raise RuleError(f"found no matching overload for '{fn}' applied to '{t.kind}'")


def _resolve_add(ts: list[CelType]) -> tuple[list[str], CelType]:
    a, b = ts
    ovs: list[str] = []
    if _is(a, "string") and _is(b, "string"):
        ovs.append("add_string")
    if _is(a, "bytes") and _is(b, "bytes"):
        ovs.append("add_bytes")
    if _is(a, "list") and _is(b, "list"):
        ovs.append("add_list")
    numeric = ("int", "uint", "double", "duration", "timestamp")
    if _is(a, *numeric) and _is(b, *numeric) and not (ovs and "dyn" not in (a.kind, b.kind)):
        ovs.append("o1")
    if not ovs:
        raise RuleError(f"found no matching overload for '_+_' applied to '({a.kind}, {b.kind})'")
    if a.kind == "dyn":
        return ovs, b if b.kind != "list" else _DYN
    return ovs, _join(a, b) if a.kind in ("list",) else a


def _resolve_index(ts: list[CelType]) -> tuple[list[str], CelType]:
    t = ts[0]
    if t.kind == "list":
        return ["index_list"], t.params[0]
    if t.kind == "map":
        return ["index_map"], t.params[1]
    if t.kind == "dyn":
        return ["index_list", "index_map"], _DYN
    raise RuleError(f"found no matching overload for '_[_]' applied to '{t.kind}'")
