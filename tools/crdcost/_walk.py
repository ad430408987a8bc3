"""The static cost walk of CRD rules (see :mod:`tools.crdcost`).

cel-go v0.26.0 ``checker/cost.go`` on cel-expr-python's parsed AST, with our own small
type checker, Kubernetes' call estimator (``k8s.io/apiserver pkg/cel/library/cost.go`` at
v0.34.9), ext.Sets estimators and the library each function comes from
(``apiserver pkg/cel/environment/base.go``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# The rule environment's parser, so the walk sees exactly the AST the product's CRD rules
# compile to (macros expanded as cel-go expands them).
from modelplane.cel import _proto
from modelplane.cel.engine import _env, _unpack

from ._calls import Arg, Entry, _comparable, _resolve, celgo_call, k8s_call
from ._model import (
    _DYN,
    _FREE,
    _LIST_CREATE,
    _MAP_CREATE,
    _ONE,
    _SCALARS,
    _T,
    _TYPE_IDENTS,
    _UNKNOWN,
    _ZERO,
    CEL_RESERVED,
    MAX_COST,
    CelType,
    Est,
    RuleError,
    _cel_type,
    _fixed,
    _join,
    _list,
    _map,
)

# ---------------------------------------------------------------- library availability

# Which Kubernetes version first offers each library to new CRD rules
# (apiserver pkg/cel/environment/base.go, v0.34.9). Functions not listed belong to the
# CEL standard library (always offered).
_LIBRARY_OF: dict[str, tuple[str, str]] = {}


def _offer(library: str, introduced: str, names: str) -> None:
    for n in names.split():
        _LIBRARY_OF.setdefault(n, (library, introduced))


_offer("URLs", "1.0", "url isURL getScheme getHost getHostname getPort getEscapedPath getQuery")
_offer("Regex", "1.0", "find findAll")
_offer("Lists", "1.0", "isSorted sum max min indexOf lastIndexOf")
_offer(
    "ext.Strings v0",
    "1.0",
    "charAt lowerAscii replace split substring trim upperAscii",
)
_offer(
    "Quantity",
    "1.28",
    "quantity isQuantity sign isGreaterThan isLessThan compareTo add sub asInteger isInteger "
    "asApproximateFloat",
)
_offer(
    "optional types",
    "1.28",
    "optional.of optional.none optional.ofNonZeroValue hasValue value orValue or",
)
_offer("ext.Strings v2", "1.29", "format strings.quote join")
_offer("ext.Sets", "1.29", "sets.contains sets.equivalent sets.intersects")
_offer(
    "IP/CIDR",
    "1.30",
    "ip isIP ip.isCanonical family isUnspecified isLoopback isLinkLocalMulticast "
    "isLinkLocalUnicast isGlobalUnicast cidr isCIDR containsIP containsCIDR masked prefixLength",
)
_offer(
    "Format",
    "1.31",
    "format.named validate format.dns1123Label format.dns1123Subdomain format.dns1035Label "
    "format.qualifiedName format.dns1123LabelPrefix format.dns1123SubdomainPrefix "
    "format.dns1035LabelPrefix format.labelValue format.uri format.uuid format.byte "
    "format.date format.datetime",
)
_offer(
    "two-variable comprehensions",
    "1.32",
    "transformList transformMap transformMapEntry existsOne @two-var",
)
_offer("Semver", "1.33", "semver isSemver major minor patch")
_offer("ext.Lists v3", "1.34", "slice flatten lists.range distinct reverse sort sortBy")


def library_introduced(name: str) -> tuple[str, str] | None:
    """(library, Kubernetes version that introduced it) for a library function."""
    return _LIBRARY_OF.get(name)


def _version(v: str) -> tuple[int, int]:
    major, _, minor = v.removeprefix("v").partition(".")
    return int(major), int(minor.partition(".")[0] or 0)


def compatibility_version(server: str) -> str:
    """The version a server checks new rules at: one minor below its own
    (component-base ``NewEffectiveVersion``: min compatibility = binary minor - 1)."""
    major, minor = _version(server)
    return f"{major}.{minor - 1}"


# ---------------------------------------------------------------- AST


@dataclass(eq=False)
class _Node:
    kind: str  # lit ident select call list map struct comp
    id: int
    name: str = ""
    value: Any = None
    target: _Node | None = None
    args: list[_Node] = field(default_factory=list)
    test_only: bool = False
    entries: list[tuple[_Node, _Node]] = field(default_factory=list)
    # comprehension parts
    iter_var: str = ""
    iter_var2: str = ""
    accu_var: str = ""


class _Builder:
    def __init__(self) -> None:
        self.next_id = 0

    def node(self, kind: str, **kw: Any) -> _Node:
        self.next_id += 1
        return _Node(kind, self.next_id, **kw)

    def convert(self, e: Any) -> _Node:
        k = e.WhichOneof("expr_kind")
        if k == "const_expr":
            return self.node("lit", value=_const(e.const_expr))
        if k == "ident_expr":
            return self.node("ident", name=e.ident_expr.name)
        if k == "select_expr":
            s = e.select_expr
            return self.node(
                "select",
                name=s.field,
                target=self.convert(s.operand),
                test_only=bool(s.test_only),
            )
        if k == "call_expr":
            return self._call(e.call_expr)
        if k == "list_expr":
            if len(e.list_expr.optional_indices):
                raise RuleError("optional list elements are not modelled")
            return self.node("list", args=[self.convert(x) for x in e.list_expr.elements])
        if k == "struct_expr":
            st = e.struct_expr
            if st.message_name:
                raise RuleError(f"message construction {st.message_name} is not declared")
            entries = []
            for en in st.entries:
                if en.optional_entry:
                    raise RuleError("optional map entries are not modelled")
                entries.append((self.convert(en.map_key), self.convert(en.value)))
            return self.node("map", entries=entries)
        if k == "comprehension_expr":
            c = e.comprehension_expr
            n = self.node(
                "comp",
                iter_var=c.iter_var,
                iter_var2=c.iter_var2,
                accu_var=c.accu_var,
            )
            n.args = [
                self.convert(c.iter_range),
                self.convert(c.accu_init),
                self.convert(c.loop_condition),
                self.convert(c.loop_step),
                self.convert(c.result),
            ]
            return n
        raise RuleError("empty expression")

    def _call(self, c: Any) -> _Node:
        args = [self.convert(a) for a in c.args]
        target = self.convert(c.target) if c.HasField("target") else None
        fn = c.function
        if target is not None:
            two_var = self._two_var_macro(fn, target, args)
            if two_var is not None:
                return two_var
            qualified = _qualified(target)
            if qualified is not None and f"{qualified}.{fn}" in _QUALIFIED:
                return self.node("call", name=f"{qualified}.{fn}", args=args)
        return self.node("call", name=fn, target=target, args=args)

    # cel-go ext/comprehensions.go expansions (cel-expr-python does not expand them).
    def _two_var_macro(self, fn: str, target: _Node, args: list[_Node]) -> _Node | None:
        if fn not in _TWO_VAR or not (3 <= len(args) <= 4):
            return None
        if args[0].kind != "ident" or args[1].kind != "ident":
            return None
        if fn in ("all", "exists", "existsOne") and len(args) != 3:
            return None
        k, v = args[0].name, args[1].name
        acc = "@result"

        def ident(name: str) -> _Node:
            return self.node("ident", name=name)

        def call(name: str, *a: _Node) -> _Node:
            return self.node("call", name=name, args=list(a))

        def lit(value: Any) -> _Node:
            return self.node("lit", value=value)

        if fn == "all":
            init, cond = lit(True), call("@not_strictly_false", ident(acc))
            step, result = call("_&&_", ident(acc), args[2]), ident(acc)
        elif fn == "exists":
            init = lit(False)
            cond = call("@not_strictly_false", call("!_", ident(acc)))
            step, result = call("_||_", ident(acc), args[2]), ident(acc)
        elif fn == "existsOne":
            init, cond = lit(0), lit(True)
            step = call("_?_:_", args[2], call("_+_", ident(acc), lit(1)), ident(acc))
            result = call("_==_", ident(acc), lit(1))
        elif fn == "transformList":
            init, cond = self.node("list"), lit(True)
            step = call("_+_", ident(acc), self.node("list", args=[args[-1]]))
            if len(args) == 4:
                step = call("_?_:_", args[2], step, ident(acc))
            result = ident(acc)
        else:  # transformMap, transformMapEntry
            init, cond = self.node("map"), lit(True)
            if fn == "transformMap":
                step = call("cel.@mapInsert", ident(acc), ident(k), args[-1])
            else:
                step = call("cel.@mapInsert", ident(acc), args[-1])
            if len(args) == 4:
                step = call("_?_:_", args[2], step, ident(acc))
            result = ident(acc)
        n = self.node("comp", iter_var=k, iter_var2=v, accu_var=acc)
        n.args = [target, init, cond, step, result]
        return n


_TWO_VAR = frozenset(
    {"all", "exists", "existsOne", "transformList", "transformMap", "transformMapEntry"}
)
_QUALIFIED = frozenset(n for n in _LIBRARY_OF if "." in n and not n.startswith("@")) | {
    "cel.bind",
    "math.greatest",
    "math.least",
    "base64.encode",
    "base64.decode",
}


def _qualified(n: _Node) -> str | None:
    if n.kind == "ident":
        return n.name
    if n.kind == "select" and not n.test_only and n.target is not None:
        inner = _qualified(n.target)
        return None if inner is None else f"{inner}.{n.name}"
    return None


def _const(c: Any) -> Any:
    k = c.WhichOneof("constant_kind")
    if k == "null_value" or k is None:
        return None
    if k == "uint64_value":
        return ("uint", int(c.uint64_value))
    return getattr(c, k)


# A build tool, not part of the product's process: its parse memo is a plain bounded LRU,
# outside the product's memo registry (modelplane.memo), whose inventory it would blur.
@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Any:
    try:
        parsed = _env("rule").check.compile(text, disable_check=True)
    except Exception as err:  # the engine reports syntax errors as exceptions
        raise RuleError(f"syntax error: {str(err).splitlines()[0]}") from None
    return _unpack(parsed.serialize(), _proto.ParsedExpr).expr


def _ast(text: str) -> _Node:
    return _Builder().convert(_parse(text))


# ---------------------------------------------------------------- the cost walk


@dataclass
class _Local:
    path: list[str] | None
    size: Est | None
    entry: Entry | None
    type: CelType


_ACCUMULATORS = ("__result__", "@result")


SizeOf = Callable[[Sequence[str] | None, CelType], "Est | None"]


class _Coster:
    def __init__(
        self,
        size_of: SizeOf,
        variables: Mapping[str, CelType],
        compat: str,
        homogeneous: bool = True,
    ) -> None:
        self.size_of = size_of
        # Kubernetes' environments enable cel.HomogeneousAggregateLiterals (base.go).
        self.homogeneous = homogeneous
        self.variables = variables
        self.compat = _version(compat)
        self.paths: dict[int, list[str]] = {}
        self.sizes: dict[int, Est] = {}
        self.entries: dict[int, Entry] = {}
        self.types: dict[int, CelType] = {}
        self.scopes: dict[str, list[_Local]] = {}
        self.used: set[str] = set()
        # Calls with no estimate (unknown functions, ext.Lists v3): the rule is refused.
        self.unmodelled: list[str] = []

    # -- bookkeeping
    def need(self, name: str) -> None:
        self.used.add(name)
        lib = _LIBRARY_OF.get(name)
        if lib is not None and _version(lib[1]) > self.compat:
            shown = "two-variable comprehension" if name == "@two-var" else name
            raise RuleError(
                f"undeclared reference to '{shown}': the {lib[0]} library is offered to new "
                f"rules from Kubernetes {lib[1]} (checked at compatibility version "
                f"{self.compat[0]}.{self.compat[1]})"
            )

    def peek(self, name: str) -> _Local | None:
        stack = self.scopes.get(name)
        return stack[-1] if stack else None

    def push(self, name: str, local: _Local) -> None:
        self.scopes.setdefault(name, []).append(local)

    def pop(self, name: str) -> None:
        self.scopes[name].pop()

    def path(self, e: _Node) -> list[str] | None:
        if e.kind == "ident":
            v = self.peek(e.name)
            if v is not None:
                return v.path
        return self.paths.get(e.id)

    def type(self, e: _Node) -> CelType:
        return self.types.get(e.id, _DYN)

    def compute_size(self, e: _Node) -> Est | None:
        if e.id in self.sizes:
            return self.sizes[e.id]
        lit = _expr_size(e)
        if lit is not None:
            return lit
        est = self.size_of(self.path(e), self.type(e))
        if est is not None:
            self.sizes[e.id] = est
            return est
        t = self.type(e)
        if t.kind in _SCALARS or (t.kind == "optional" and t.params[0].kind in _SCALARS):
            return _ONE
        if e.kind == "ident":
            v = self.peek(e.name)
            if v is not None and v.size is not None:
                return v.size
        return None

    def entry(self, e: _Node) -> Entry | None:
        if e.id in self.entries:
            return self.entries[e.id]
        if e.kind == "ident":
            v = self.peek(e.name)
            if v is not None:
                return v.entry
        return None

    def size_or_unknown(self, e: _Node) -> Est:
        s = self.compute_size(e)
        return _UNKNOWN if s is None else s

    def arg(self, e: _Node) -> Arg:
        p = self.path(e)
        if p and p[0] in _ACCUMULATORS:
            p = None
        return Arg(p, self.type(e), e, self.compute_size(e))

    def arg_size(self, a: Arg) -> Est:
        # library cost.go sizeEstimate: ComputedSize, else the path estimator, else unknown.
        if a.size is not None:
            return a.size
        s = self.size_of(a.path, a.type)
        return _UNKNOWN if s is None else s

    # -- the walk
    def cost(self, e: _Node) -> Est:
        k = e.kind
        if k == "lit":
            self.types[e.id] = _lit_type(e.value)
            return _ZERO
        if k == "ident":
            return self.cost_ident(e)
        if k == "select":
            return self.cost_select(e)
        if k == "call":
            return self.cost_call(e)
        if k == "list":
            return self.cost_list(e)
        if k == "map":
            return self.cost_map(e)
        return self.cost_comp(e)

    def cost_ident(self, e: _Node) -> Est:
        v = self.peek(e.name)
        if v is not None:
            self.paths[e.id] = list(v.path or [])
            self.types[e.id] = v.type
            return _ONE
        self.paths[e.id] = [e.name]
        if e.name in self.variables:
            if e.name == "oldSelf":
                self.used.add("oldSelf")
            self.types[e.id] = self.variables[e.name]
        elif e.name in _TYPE_IDENTS:
            self.types[e.id] = _T["type"]
        else:
            raise RuleError(f"undeclared reference to '{e.name}'")
        return _ONE

    def cost_select(self, e: _Node) -> Est:
        assert e.target is not None
        operand = e.target
        if e.test_only:
            # Kubernetes: PresenceTestHasCost(false).
            c = self.cost(operand)
            self._field_type(operand, e.name)
            self.types[e.id] = _T["bool"]
            return c
        c = self.cost(operand)
        t = self.type(operand)
        if t.kind in ("map", "object"):
            c = c.add(_ONE)
        self.types[e.id] = self._field_type(operand, e.name)
        self.paths[e.id] = list(self.path(operand) or []) + [e.name]
        return c

    def _field_type(self, operand: _Node, name: str) -> CelType:
        return self._select_type(self.type(operand), name)

    def _select_type(self, t: CelType, name: str) -> CelType:
        if t.kind == "optional":
            # Selecting on an optional (optionalOldSelf) yields an optional of the field.
            return CelType("optional", (self._select_type(t.params[0], name),))
        if t.kind == "object":
            assert t.decl is not None
            ft = t.decl.fields.get(name)
            if ft is None and name in CEL_RESERVED and self.compat >= (1, 31):
                # apiserver DeclTypeProvider.FindStructFieldType: from compatibility 1.31 a
                # reserved word selects its escaped field (the size path keeps the word,
                # so the schema estimator does not find it: unbounded).
                ft = t.decl.fields.get(f"__{name}__")
            if ft is None:
                raise RuleError(f"undefined field '{name}'")
            return _cel_type(ft)
        if t.kind == "map":
            return t.params[1]
        if t.kind in ("dyn", "free"):
            return _DYN
        raise RuleError(f"type '{t.kind}' does not support field selection ('{name}')")

    def cost_list(self, e: _Node) -> Est:
        total = _ZERO
        item = Est(0 if not e.args else MAX_COST, 0)
        elem_t: CelType | None = None
        for x in e.args:
            total = total.add(self.cost(x))
            item = item.union(self.size_or_unknown(x))
            elem_t = self._element(elem_t, self.type(x))
        self.entries[e.id] = Entry("list", _ONE, item)
        self.types[e.id] = _list(elem_t or _FREE)
        return total.add(_fixed(_LIST_CREATE))

    def _element(self, seen: CelType | None, t: CelType) -> CelType:
        # HomogeneousAggregateLiterals: the elements of a list literal, and the keys and
        # values of a map literal, must share one type.
        if self.homogeneous and seen is not None and not _comparable(seen, t):
            raise RuleError(f"expected type '{seen.kind}' but found '{t.kind}' in a literal")
        return _join(seen, t)

    def cost_map(self, e: _Node) -> Est:
        total = _ZERO
        empty = not e.entries
        ks = Est(0 if empty else MAX_COST, 0)
        vs = Est(0 if empty else MAX_COST, 0)
        kt: CelType | None = None
        vt: CelType | None = None
        for k, v in e.entries:
            total = total.add(self.cost(k)).add(self.cost(v))
            ks = ks.union(self.size_or_unknown(k))
            vs = vs.union(self.size_or_unknown(v))
            kt, vt = self._element(kt, self.type(k)), self._element(vt, self.type(v))
        self.entries[e.id] = Entry("map", ks, vs)
        self.types[e.id] = _map(kt or _FREE, vt or _FREE)
        return total.add(_fixed(_MAP_CREATE))

    def cost_comp(self, e: _Node) -> Est:
        rng, init, cond, step, result = e.args
        if e.iter_var2:
            self.need("@two-var")
        total = self.cost(rng).add(self.cost(init))
        rt = self.type(rng)
        accu_t = self.type(init)
        self.push(
            e.accu_var, _Local(self.path(init), self.compute_size(init), self.entry(init), accu_t)
        )
        ent = self.entry(rng)
        container = ent.container if ent is not None else rt.kind
        rpath = list(self.path(rng) or [])
        if rt.kind not in ("list", "map", "dyn"):
            raise RuleError(
                f"expression of type '{rt.kind}' cannot be the range of a comprehension"
            )
        if e.iter_var2:
            key_t, val_t = _two_var_types(rt)
            key_sub = "@indices" if container == "list" else "@keys"
            val_sub = "@items" if container == "list" else "@values"
            self.push(e.iter_var, _Local(rpath + [key_sub], ent.key if ent else None, None, key_t))
            self.push(e.iter_var2, _Local(rpath + [val_sub], ent.val if ent else None, None, val_t))
        else:
            if container == "list":
                size, sub = (ent.val if ent else None), "@items"
            else:
                size, sub = (ent.key if ent else None), "@keys"
            self.push(e.iter_var, _Local(rpath + [sub], size, None, _one_var_type(rt)))
        loop = self.cost(cond)
        st = self.cost(step)
        self.pop(e.iter_var)
        if e.iter_var2:
            self.pop(e.iter_var2)
        # The checker infers the accumulator's type from the step (filter/map build a list).
        local = self.peek(e.accu_var)
        assert local is not None
        local.type = _accu_type(accu_t, self.type(step))
        total = total.add(self.cost(result))
        self.pop(e.accu_var)
        self.types[e.id] = self.type(result)
        count = self.size_or_unknown(rng)
        total = total.add(count.mul(st.add(loop)))
        if init.kind == "lit":
            s = self.compute_size(init)
            if s is not None:
                self.sizes[e.id] = s
        elif init.kind in ("list", "map"):
            self.sizes[e.id] = count
            step_entry = self.entry(step)
            if step_entry is not None:
                self.entries[e.id] = step_entry
        return total

    def cost_call(self, e: _Node) -> Est:
        fn = e.name
        if fn == "dyn" and len(e.args) == 1 and e.target is None:
            c = self.cost(e.args[0])
            self._copy_sizes(e, e.args[0])
            self.types[e.id] = _DYN
            return _ONE.add(c)
        if fn == "cel.bind":
            raise RuleError("undeclared reference to 'cel.bind' (not in the CRD environment)")
        arg_costs = []
        args = []
        for a in e.args:
            arg_costs.append(self.cost(a))
            args.append(self.arg(a))
        total = _ZERO
        target: Arg | None = None
        if e.target is not None:
            total = total.add(self.cost(e.target))
            target = self.arg(e.target)
        self.need(fn)
        overloads, rtype = _resolve(fn, target, args)
        self.types[e.id] = rtype
        fn_cost = Est(MAX_COST, 0)
        result_size: Est | None = None
        if "unmodelled" in overloads:
            self.unmodelled.append(fn)
        for ov in overloads:
            c, rs = self.function_cost(e, fn, ov, target, args, arg_costs)
            fn_cost = fn_cost.union(c)
            if rs is not None:
                result_size = rs if result_size is None else result_size.union(rs)
            if ov in ("index_list", "index_map"):
                ent = self.entry(e.args[0])
                result_size = ent.val if ent is not None else None
                sub = "@items" if ov == "index_list" else "@values"
                self.paths[e.id] = list(self.path(e.args[0]) or []) + [sub]
        if result_size is None:
            result_size = self.compute_size(e)
        if result_size is not None:
            self.sizes[e.id] = result_size
        return total.add(fn_cost)

    def _copy_sizes(self, dst: _Node, src: _Node) -> None:
        s = self.compute_size(src)
        if s is not None:
            self.sizes[dst.id] = s
        en = self.entry(src)
        if en is not None:
            self.entries[dst.id] = en

    def function_cost(
        self,
        e: _Node,
        fn: str,
        ov: str,
        target: Arg | None,
        args: list[Arg],
        arg_costs: list[Est],
    ) -> tuple[Est, Est | None]:
        arg_sum = _ZERO
        for c in arg_costs:
            arg_sum = arg_sum.add(c)
        if ov.startswith("sets_"):
            # cel-go ext/sets.go estimateSetsCost: size(a) * size(b) * factor + 1.
            factor = 2.0 if ov == "sets_equivalent" else 1.0
            est = self.arg_size(args[0]).mul(self.arg_size(args[1])).factor(factor).add(_ONE)
            return est.add(arg_sum), None
        k8s = k8s_call(self, fn, ov, target, args)
        if k8s is not None:
            return k8s[0].add(arg_sum), k8s[1]
        return celgo_call(self, e, ov, target, args, arg_costs, arg_sum)

    def set_entry(self, e: _Node, entry: Entry) -> None:
        """Record the entry size of ``e`` (a call's result)."""
        self.entries[e.id] = entry


def _expr_size(e: _Node) -> Est | None:
    """cel-go computeExprSize: literal sizes."""
    if e.kind == "lit":
        v = e.value
        if isinstance(v, str):
            return _fixed(len(v))
        if isinstance(v, bytes):
            return _fixed(len(v))
        return _ONE
    if e.kind == "list":
        return _fixed(len(e.args))
    if e.kind == "map":
        return _fixed(len(e.entries))
    return None


def _lit_type(v: Any) -> CelType:
    if isinstance(v, bool):
        return _T["bool"]
    if isinstance(v, int):
        return _T["int"]
    if isinstance(v, float):
        return _T["double"]
    if isinstance(v, str):
        return _T["string"]
    if isinstance(v, bytes):
        return _T["bytes"]
    if isinstance(v, tuple):
        return _T["uint"]
    return _T["null"]


def _one_var_type(rt: CelType) -> CelType:
    if rt.kind in ("list", "map"):
        return rt.params[0]
    return _DYN


def _two_var_types(rt: CelType) -> tuple[CelType, CelType]:
    if rt.kind == "list":
        return _T["int"], rt.params[0]
    if rt.kind == "map":
        return rt.params[0], rt.params[1]
    return _DYN, _DYN


def _accu_type(init: CelType, step: CelType) -> CelType:
    if init.kind in ("list", "map") and step.kind == init.kind:
        return step
    return init
